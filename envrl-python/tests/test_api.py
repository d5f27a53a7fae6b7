"""The gymnasium-style API, batching, seeding, bad input and pickling."""

import json
import pickle
import threading

import pytest

import envrl
from envrl.alfworld import AlfWorldEnv, AlfWorldVecEnv
from envrl.keydoor import KeyDoorEnv
from envrl.webshop import WebShopEnv, WebShopVecEnv


def play_expert(env):
    """Plays the expert's plan from the current state; returns the last step."""
    result = None
    for action in env.expert_plan():
        result = env.step(action)
    return result


def test_alfworld_reset_step_and_info():
    env = AlfWorldEnv(generated=50, seed=3)
    obs, info = env.reset(seed=1)
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    assert set(info) >= {"admissible_commands", "won", "gamefile", "task_type", "task"}
    assert "look" in info["admissible_commands"] and info["won"] is False
    obs, reward, terminated, truncated, info = env.step("look")
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = play_expert(env)
    assert (reward, terminated, truncated, info["won"]) == (10.0, True, False, True)
    # Same seed, same game.
    assert env.reset(seed=1)[1]["gamefile"] == AlfWorldEnv(generated=50, seed=3).reset(seed=1)[1]["gamefile"]


def test_the_step_limit_truncates():
    env = AlfWorldEnv(generated=5, max_steps=3)
    env.reset(options={"game": 0})
    results = [env.step("jump") for _ in range(3)]
    assert [r[2:4] for r in results] == [(False, False), (False, False), (False, True)]
    assert results[0][0] == "Nothing happens."


def test_games_by_index_and_name_and_task_types():
    env = AlfWorldEnv(generated=30, task_types=["pick", "look"])
    names = env.game_names
    assert len(env) == 30 and all(("pick_and_place" in n) or ("look_at" in n) for n in names)
    _, info = env.reset(options={"game": names[7]})
    assert info["game_index"] == 7 and info["gamefile"] == names[7]


def test_bad_input_raises_python_exceptions_naming_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        AlfWorldEnv(data=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="json_2.1.1"):
        AlfWorldEnv(data=tmp_path)
    game = tmp_path / "json_2.1.1/train/pick_and_place_simple-Mug-None-Desk-1/trial_1/game.tw-pddl"
    game.parent.mkdir(parents=True)
    game.write_text("{not json")
    with pytest.raises(ValueError, match="game.tw-pddl"):
        AlfWorldEnv(data=tmp_path)
    with pytest.raises(ValueError, match="unknown ALFWorld split"):
        AlfWorldEnv(split="dev")
    with pytest.raises(ValueError, match="unknown ALFWorld task type `fly`"):
        AlfWorldEnv(task_types=["fly"])
    env = AlfWorldEnv(generated=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("look")
    with pytest.raises(IndexError, match="out of range"):
        env.reset(options={"game": 3})
    with pytest.raises(ValueError, match="no game named"):
        env.reset(options={"game": "nope"})
    env.reset()
    with pytest.raises(TypeError, match="must be a str, got int"):
        env.step(5)
    vec = AlfWorldVecEnv(2, generated=3)
    vec.reset()
    with pytest.raises(ValueError, match="expected 2 actions"):
        vec.step(["look"])
    with pytest.raises(TypeError):
        vec.step(["look", None])
    with pytest.raises(FileNotFoundError):
        WebShopEnv(data=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="observation_mode"):
        WebShopEnv(observation_mode="html")


def test_a_malformed_catalog_names_the_file(tmp_path, webshop_data):
    for f in webshop_data.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "items_shuffle_1000.json").write_text('[{"asin": 7}]')
    with pytest.raises(ValueError, match="items_shuffle_1000.json"):
        WebShopEnv(data=tmp_path)


def test_calls_after_the_episode_ended_are_errors():
    env = AlfWorldEnv(generated=5)
    env.reset(options={"game": 0})
    play_expert(env)
    with pytest.raises(RuntimeError, match="ended"):
        env.step("look")
    shop = WebShopEnv()
    shop.reset(options={"goal": 0})
    for action in shop.expert_plan():
        shop.step(action)
    with pytest.raises(RuntimeError, match="ended"):
        shop.step("click[back to search]")


def test_groups_share_games_and_goals():
    vec = AlfWorldVecEnv(6, generated=200, seed=5, group_n=3)
    for _ in range(3):
        _, infos = vec.reset()
        games = [i["gamefile"] for i in infos]
        assert games[:3] == [games[0]] * 3 and games[3:] == [games[3]] * 3
        assert games[0] != games[3]
    shops = WebShopVecEnv(4, group_n=2)
    obs, infos = shops.reset()
    goals = [i["goal"] for i in infos]
    assert goals[0] == goals[1] and goals[2] == goals[3]
    assert obs[0] == obs[1]


def test_batched_steps_equal_single_environments():
    vec = AlfWorldVecEnv(4, generated=40, seed=2)
    _, infos = vec.reset(games=[0, 1, 2, 3])
    singles = [AlfWorldEnv(generated=40, seed=2) for _ in range(4)]
    for i, env in enumerate(singles):
        env.reset(options={"game": i})
    actions = [i["admissible_commands"][0] for i in infos]
    batched = vec.step(actions)
    for i, env in enumerate(singles):
        obs, reward, term, trunc, info = env.step(actions[i])
        assert (batched[0][i], batched[1][i], batched[2][i], batched[3][i]) == (obs, reward, term, trunc)
        assert batched[4][i] == info


def test_batched_environments_from_several_python_threads():
    def run(seed, out):
        vec = AlfWorldVecEnv(16, generated=100, seed=seed)
        _, infos = vec.reset()
        trace = []
        for _ in range(20):
            actions = [i["admissible_commands"][len(trace) % len(i["admissible_commands"])] for i in infos]
            obs, rewards, _, _, infos = vec.step(actions)
            trace.append(obs)
        out[seed] = trace

    alone, together = {}, {}
    for seed in range(4):
        run(seed, alone)
    threads = [threading.Thread(target=run, args=(seed, together)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone


def test_pickled_environments_continue_where_they_were():
    env = AlfWorldEnv(generated=20, seed=9)
    env.reset(options={"game": 4})
    env.step("look")
    copy = pickle.loads(pickle.dumps(env))
    plan = env.expert_plan()
    assert copy.expert_plan() == plan
    assert copy.step(plan[0]) == env.step(plan[0])
    # The random stream travels too.
    assert copy.reset()[1]["gamefile"] == env.reset()[1]["gamefile"]

    vec = AlfWorldVecEnv(3, generated=20, group_n=3)
    vec.reset()
    vec.step(["look"] * 3)
    vec_copy = pickle.loads(pickle.dumps(vec))
    assert vec_copy.step(["inventory"] * 3) == vec.step(["inventory"] * 3)

    shop = WebShopEnv()
    for goal in (3, 8):
        shop.reset(options={"goal": goal})
        shop.step("search[red]")
    shop_copy = pickle.loads(pickle.dumps(shop))
    assert shop_copy.step("click[back to search]") == shop.step("click[back to search]")

    keys = KeyDoorEnv()
    keys.reset(options={"task": 11})
    keys.step("look")
    assert pickle.loads(pickle.dumps(keys)).step("look") == keys.step("look")


def test_keydoor_is_won_by_following_the_admissible_actions():
    env = KeyDoorEnv(rooms=2, max_steps=30, seed=0)
    obs, info = env.reset(options={"task": 1})
    assert info["admissible_commands"]
    for _ in range(30):
        # Try each admissible action until the world says something new.
        obs, reward, terminated, truncated, info = env.step(info["admissible_commands"][0])
        if terminated or truncated:
            break
    assert terminated or truncated


def test_the_action_projection_is_verl_agents():
    from envrl.verl_agent import alfworld_projection, webshop_projection

    actions, valids = alfworld_projection(
        ["<think>go</think><action>Go To Desk 1</action>", "go to desk 1", "<action>look</action>"],
        None,
    )
    assert actions == ["go to desk 1", "go to desk 1", "look"] and valids == [1, 0, 0]
    assert webshop_projection(["x" * 25])[0] == ["x" * 20]
    assert envrl.__version__ == "0.1.0"


def test_arguments_that_mean_nothing_are_refused_not_reinterpreted():
    env = AlfWorldEnv(generated=3)
    with pytest.raises(TypeError, match="got bool"):
        env.reset(options={"game": True})
    with pytest.raises(ValueError, match="unknown option `gmae`; expected one of: game"):
        env.reset(options={"gmae": 1})
    vec = AlfWorldVecEnv(2, generated=3)
    vec.reset()
    with pytest.raises(TypeError, match="not a single str"):
        vec.step("lo")
    from envrl.keydoor import KeyDoorEnv

    with pytest.raises(TypeError, match="got bool"):
        KeyDoorEnv().reset(options={"task": False})
    with pytest.raises(ValueError, match="unknown option `seed`"):
        KeyDoorEnv().reset(options={"seed": 3})


def test_sizes_that_cannot_fit_are_refused_before_allocating():
    # Each of these aborted the process or ran on for hours before.
    with pytest.raises(MemoryError, match=r"AlfWorldVecEnv: 100000000 environments need at least"):
        AlfWorldVecEnv(10**8, generated=5)
    with pytest.raises(MemoryError, match=r"WebShopVecEnv: 10000000 environments"):
        WebShopVecEnv(10**7)
    with pytest.raises(MemoryError, match=r"generated=1000000000 games need at least .* GiB available"):
        AlfWorldEnv(generated=10**9)
    with pytest.raises(MemoryError, match=r"products=1000000000 generated products"):
        WebShopEnv(products=10**9)
    with pytest.raises(ValueError, match="n and group_n must be at least 1, got n=0"):
        AlfWorldVecEnv(0, generated=5)
    with pytest.raises(ValueError, match=r"task_types=\[\] keeps no game"):
        AlfWorldEnv(generated=5, task_types=[])


def test_one_environment_shared_by_two_threads_says_what_to_do():
    vec = AlfWorldVecEnv(64, generated=50)
    vec.reset()
    errors = []
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            try:
                vec.step(["look"] * 64)
            except RuntimeError as e:
                errors.append(str(e))
                stop.set()

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    stop.wait(timeout=20)
    stop.set()
    for t in threads:
        t.join()
    assert errors, "four threads stepping one environment for 20 s never collided"
    assert "in use by another thread" in errors[0] and "threading.Lock" in errors[0], errors[0]
    assert "AlfWorldVecEnv" in errors[0]
