"""The engines under gymnasium's interfaces: gymnasium's own checker on the single
environments, and the batched ones against gymnasium's own SyncVectorEnv."""

import random

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

from envrl.alfworld import AlfWorldEnv, AlfWorldVecEnv  # noqa: E402
from envrl.gym import AnyText, TextEnv, TextVectorEnv, batched_infos  # noqa: E402
from envrl.keydoor import KeyDoorEnv  # noqa: E402
from envrl.webshop import WebShopEnv, WebShopVecEnv  # noqa: E402


@pytest.mark.parametrize(
    "make",
    [
        lambda: AlfWorldEnv(generated=20, max_steps=10),
        lambda: WebShopEnv(max_steps=10),
        lambda: KeyDoorEnv(),
    ],
    ids=["alfworld", "webshop", "keydoor"],
)
def test_single_environments_pass_gymnasiums_checker(make):
    check_env(TextEnv(make()), skip_render_check=True)


def test_texts_of_any_characters_are_in_the_space():
    space = AnyText(100)
    assert space.contains("-= Welcome =-\n\tYou see a mug 1.") and space.contains("é ™ 中")
    assert not space.contains("x" * 101) and not space.contains(3)
    assert space.contains(space.sample())


def commands(infos, rng):
    """A command per environment: mostly an admissible one, sometimes one it refuses."""
    out = []
    for admissible in infos["admissible_commands"]:
        out.append(rng.choice(list(admissible)) if rng.random() < 0.8 else "jump")
    return out


def test_the_batch_plays_what_gymnasiums_sync_vector_env_plays():
    n, seed = 4, 7
    ours = TextVectorEnv(AlfWorldVecEnv(n, generated=30, max_steps=6))
    theirs = SyncVectorEnv(
        [lambda: TextEnv(AlfWorldEnv(generated=30, max_steps=6)) for _ in range(n)],
        autoreset_mode=AutoresetMode.NEXT_STEP,
    )
    assert ours.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    observations, infos = ours.reset(seed=seed)
    expected, their_infos = theirs.reset(seed=seed)
    assert observations == tuple(expected)
    rng, episodes_ended, restarted = random.Random(0), 0, 0
    for _ in range(40):
        actions = commands(infos, rng)
        step = ours.step(actions)
        their = theirs.step(tuple(actions))
        assert step[0] == tuple(their[0])
        for got, want in zip(step[1:4], their[1:4]):
            np.testing.assert_array_equal(got, want)
        restarted += sum(o.startswith("-= Welcome") for o in step[0])
        episodes_ended += int(np.sum(step[2] | step[3]))
        infos = step[4]
        assert list(infos["gamefile"]) == list(their[4]["gamefile"])
    assert episodes_ended >= n and restarted >= n  # the autoreset was exercised


def test_an_ended_episode_restarts_on_the_next_step():
    envs = TextVectorEnv(AlfWorldVecEnv(2, generated=10, max_steps=2))
    envs.reset(seed=0)
    envs.step(["jump", "jump"])
    observations, rewards, terminated, truncated, _ = envs.step(["jump", "jump"])
    assert list(truncated) == [True, True] and observations == ("Nothing happens.",) * 2
    observations, rewards, terminated, truncated, infos = envs.step(["look", "look"])
    assert all(o.startswith("-= Welcome") for o in observations)
    assert list(rewards) == [0.0, 0.0] and not terminated.any() and not truncated.any()
    assert set(infos) >= {"admissible_commands", "_admissible_commands", "won", "_won"}


def test_the_webshop_batch_takes_goals_and_seeds():
    envs = TextVectorEnv(WebShopVecEnv(3, max_steps=5))
    first, _ = envs.reset(seed=1)
    again, _ = envs.reset(seed=1)
    assert first == again
    chosen, infos = envs.reset(options={"goals": [0, 1, 2]})
    assert len(chosen) == 3 and infos["_instruction"].all()
    observations, rewards, terminated, truncated, infos = envs.step(["search[shirt]"] * 3)
    assert rewards.dtype == np.float64 and terminated.dtype == np.bool_


def test_info_dicts_are_batched_with_masks():
    infos = batched_infos([{"won": False, "items": [1]}, {"won": True}])
    assert list(infos["won"]) == [False, True] and infos["won"].dtype == np.bool_
    assert list(infos["_items"]) == [True, False] and infos["items"][0] == [1]
