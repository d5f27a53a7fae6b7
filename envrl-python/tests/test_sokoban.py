"""Sokoban through Python: the recorded verl-agent episodes replay step for step, and the
verl-agent drop-in (``build_sokoban_envs``, ``sokoban_projection``) draws its seeds and reads
replies as verl-agent does. The transcripts are the repository's own (``tests/data/sokoban``)."""

import json
import pathlib

import pytest

from conftest import read_jsonl
from envrl.sokoban import SokobanEnv
from envrl.verl_agent import build_sokoban_envs, sokoban_projection

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "sokoban"
CONFIGS = {
    "verl-agent": dict(dim_room=(6, 6), num_boxes=1, max_steps=15, search_depth=30),
    "two-boxes": dict(dim_room=(6, 6), num_boxes=2, max_steps=30, search_depth=30),
    "small": dict(dim_room=(7, 7), num_boxes=2, max_steps=40, search_depth=50),
    "wide": dict(dim_room=(6, 8), num_boxes=1, max_steps=20, search_depth=100),
}


def test_recorded_episodes_replay_step_for_step():
    episodes = read_jsonl(DATA / "episodes.jsonl.zst")
    assert len(episodes) >= 300
    for episode in episodes:
        env = SokobanEnv(**CONFIGS[episode["config"]])
        obs, info = env.reset(episode["seed"])
        assert obs == episode["observation"]
        assert info == {"won": False}
        if episode["solution"]:
            assert env.solve() == episode["solution"]
        for step in episode["steps"]:
            obs, reward, done, info = env.step(step["action"])
            assert (obs, reward, done, info["won"]) == (
                step["observation"],
                step["reward"],
                step["done"],
                step["won"],
            )


def test_the_projection_is_verl_agents():
    cases = json.loads((DATA / "projection.json").read_text(encoding="utf-8"))
    actions, valids = sokoban_projection([c["response"] for c in cases])
    assert actions == [c["action"] for c in cases]
    assert valids == [c["valid"] for c in cases]


def test_reset_seeds_are_drawn_from_numpys_global_stream_as_verl_agent_draws_them():
    seeds = json.loads((DATA / "seeds.json").read_text(encoding="utf-8"))
    envs = build_sokoban_envs(seed=0, env_num=8, group_n=2, env_kwargs=CONFIGS["verl-agent"])
    for draw in seeds["0-train"]:
        envs.reset()
        expected = [SokobanEnv(**CONFIGS["verl-agent"]) for _ in draw]
        for env, seed in zip(expected, draw):
            env.reset(seed)
        rendered = envs.render()
        assert rendered[0::2] == rendered[1::2], "a group plays one room"
        assert rendered[0::2] == [env.render() for env in expected]
    val = build_sokoban_envs(seed=1000, env_num=8, is_train=False, env_kwargs=CONFIGS["verl-agent"])
    val.reset()
    first = SokobanEnv(**CONFIGS["verl-agent"])
    first.reset(seeds["1000-test"][0][0])
    assert val.render(env_idx=0) == first.render()


def test_the_drop_in_has_verl_agents_shapes_and_refuses_nonsense():
    envs = build_sokoban_envs(seed=3, env_num=2, group_n=1, env_kwargs=CONFIGS["verl-agent"])
    obs, infos = envs.reset()
    assert len(obs) == 2 and infos == [{"won": False}] * 2
    obs, rewards, dones, infos = envs.step([1, 0])
    assert rewards[1] == -0.1 and dones == [False, False]
    assert set(infos[0]) == {"action_is_effective", "won"}
    with pytest.raises(ValueError, match="expected 2 actions"):
        envs.step([1])
    with pytest.raises(TypeError, match="got bool"):
        envs.step([True, 1])
    with pytest.raises(ValueError, match="got 7"):
        envs.step([7, 1])
    with pytest.raises(ValueError, match=r"unknown Sokoban env_kwargs \[.dim_rooms.\]"):
        build_sokoban_envs(env_kwargs={"dim_rooms": (6, 6)})
    with pytest.raises(ValueError, match="text only"):
        build_sokoban_envs(mode="rgb_array")
    with pytest.raises(ValueError, match="boxes"):
        SokobanEnv(num_boxes=0)
    with pytest.raises(RuntimeError, match="reset"):
        SokobanEnv().step(1)
    envs.close()
    with pytest.raises(RuntimeError, match="closed"):
        envs.reset()


def test_rooms_are_rows_of_ints():
    env = SokobanEnv()
    env.reset(0)
    assert isinstance(env.room_state[0], list) and all(isinstance(c, int) for c in env.room_state[0])
    assert len(env.room_fixed) == 6 and len(env.room_fixed[0]) == 6
    assert isinstance(env.room_seed, int)


def test_the_builder_takes_verl_agents_make_envs_calls():
    """``make_envs`` at verl-agent's HEAD (and since 2025-08-21) passes ``resources_per_worker``
    by keyword; its signature also has it as the fifth positional argument; the older form had
    ``is_train`` there."""
    env_kwargs = {"dim_room": (6, 6), "num_boxes": 1, "max_steps": 100, "search_depth": 30}
    resources_per_worker = {"num_cpus": 0.1, "num_gpus": 0}
    train = build_sokoban_envs(
        0, 4, 2, mode="tiny_rgb_array", is_train=True, env_kwargs=env_kwargs,
        resources_per_worker=resources_per_worker,
    )
    val = build_sokoban_envs(
        0 + 1000, 4, 1, mode="tiny_rgb_array", is_train=False, env_kwargs=env_kwargs,
        resources_per_worker=resources_per_worker,
    )
    assert (train.num_processes, val.num_processes, train.is_train, val.is_train) == (8, 4, True, False)

    # Each builder seeds numpy's global stream, as verl-agent's does: build, then reset at once.
    def first(*args, **kwargs):
        return build_sokoban_envs(*args, **kwargs).reset()

    keyword = first(0, 4, 2, mode="tiny_rgb_array", is_train=True, env_kwargs=env_kwargs,
                    resources_per_worker=resources_per_worker)
    assert first(0, 4, 2, "tiny_rgb_array", None, True, env_kwargs) == keyword
    assert first(0, 4, 2, "tiny_rgb_array", True, env_kwargs) == keyword
