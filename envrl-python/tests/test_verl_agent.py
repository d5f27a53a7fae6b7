"""The verl-agent drop-in: signatures, shapes, seeding, info keys, and a full loop."""

import numpy as np

from envrl.verl_agent import (
    alfworld_projection,
    build_alfworld_envs,
    build_webshop_envs,
    webshop_projection,
)


def test_alfworld_shapes_seeding_and_keys():
    envs = build_alfworld_envs("unused.yaml", 7, 3, 2, {"num_cpus": 0.1}, True, {"generated": 100})
    obs, images, infos = envs.reset()
    assert images is None and len(obs) == len(infos) == 6
    for key in ("won", "admissible_commands", "extra.gamefile", "observation_text"):
        assert all(key in info for info in infos)
    games = [info["extra.gamefile"] for info in infos]
    assert games[0] == games[1] and games[2] == games[3] and games[4] == games[5]
    assert envs.get_admissible_commands == [i["admissible_commands"] for i in infos]
    # The same seed gives the same games; the older signature (no resources_per_worker) works.
    again = build_alfworld_envs("unused.yaml", 7, 3, 2, True, {"generated": 100})
    assert [i["extra.gamefile"] for i in again.reset()[2]] == games
    envs.close()


def test_a_verl_agent_style_loop_wins_with_the_expert():
    envs = build_alfworld_envs(None, 0, 4, 2, None, True, {"max_steps": 50, "generated": 100})
    obs, _, infos = envs.reset()
    plans = envs._envs.expert_plans()
    total = np.zeros(len(obs))
    done = np.zeros(len(obs), dtype=bool)
    for t in range(max(len(p) for p in plans)):
        replies = [
            f"<think>step {t}</think><action>{p[t] if t < len(p) else 'look'}</action>" for p in plans
        ]
        actions, valids = alfworld_projection(replies, envs.get_admissible_commands)
        assert all(valids)
        obs, _, rewards, dones, infos = envs.step(actions)
        total += np.where(done, 0, rewards)
        done |= np.array(dones)
    assert done.all() and (total == 10.0).all() and all(i["won"] for i in infos)


def test_webshop_goals_are_drawn_like_verl_agent():
    envs = build_webshop_envs(seed=0, env_num=3, group_n=2, is_train=False, env_kwargs={"data": None})
    obs, infos = envs.reset()
    assert len(obs) == 6 and all(set(i) == {"available_actions", "won"} for i in infos)
    expected = np.repeat(np.random.RandomState(0).choice(range(500), size=3, replace=False), 2)
    assert [i for i in envs._envs.reset(expected.tolist())[0]] == obs
    assert envs.goal_idxs == range(500)
    actions, valids = webshop_projection(["<think>a</think><action>search[red shoes]</action>"] * 6)
    obs, rewards, dones, infos = envs.step(actions)
    assert rewards == [0] * 6 and dones == [False] * 6
    assert all(set(i) == {"available_actions", "task_score", "won"} for i in infos)
    train = build_webshop_envs(0, 1, 1, True, None)
    assert train.goal_idxs.start == 500


def test_arguments_that_mean_nothing_are_refused():
    import pytest

    from envrl.verl_agent import build_sokoban_envs

    with pytest.raises(ValueError, match=r"unknown ALFWorld env_kwargs \['eval_datset'\]; expected"):
        build_alfworld_envs(None, 0, 1, 1, None, False, {"eval_datset": "eval_out_of_distribution"})
    with pytest.raises(ValueError, match=r"unknown WebShop env_kwargs \['obs_mode'\]"):
        build_webshop_envs(0, 1, 1, None, True, {"obs_mode": "html"})
    with pytest.raises(TypeError, match="is_train must be a bool, got 'test'"):
        build_webshop_envs(0, 1, 1, None, "test", None)
    with pytest.raises(ValueError, match="env_num must be an int of at least 1, got 0"):
        build_sokoban_envs(0, 0, 1)
    with pytest.raises(ValueError, match="human_goals=True is not supported"):
        build_webshop_envs(0, 1, 1, None, True, {"human_goals": True})
    with pytest.raises(ValueError, match="expected a path to items_shuffle_1000.json"):
        build_webshop_envs(0, 1, 1, None, True, {"file_path": "/data/items_shuffle.json"})
    # What verl-agent's trainer passes is accepted.
    shop = build_webshop_envs(
        0, 1, 1, None, True, {"observation_mode": "text", "num_products": None, "human_goals": False}
    )
    for envs in (shop, build_alfworld_envs(None, 0, 1, 1, None, True, {"generated": 5})):
        envs.reset()
        envs.close()
        with pytest.raises(RuntimeError, match="is closed"):
            envs.reset()
        with pytest.raises(RuntimeError, match="is closed"):
            envs.step(["look"])


def test_the_drop_ins_take_verl_agents_make_envs_calls(alfworld_data, webshop_data, monkeypatch):
    """The three calls of verl-agent's ``make_envs`` (agent_system/environments/env_manager.py,
    HEAD), argument for argument, with its default config values."""
    from types import SimpleNamespace as NS

    from envrl.verl_agent import build_alfworld_envs, build_sokoban_envs, build_webshop_envs

    config = NS(
        env=NS(
            seed=0,
            max_steps=50,
            alfworld=NS(eval_dataset="eval_out_of_distribution"),
            sokoban=NS(dim_room=[6, 6], num_boxes=1, search_depth=30, mode="tiny_rgb_array"),
            webshop=NS(human_goals=False),
        ),
        data=NS(train_batch_size=2, val_batch_size=3),
    )
    group_n = 2
    resources_per_worker = {"num_cpus": 0.1, "num_gpus": 0}
    alf_config_path = "agent_system/environments/env_package/alfworld/configs/config_tw.yaml"
    built = []

    monkeypatch.setenv("ALFWORLD_DATA", str(alfworld_data))  # where verl-agent's config points
    env_kwargs = {"eval_dataset": config.env.alfworld.eval_dataset}
    _envs = build_alfworld_envs(alf_config_path, config.env.seed, config.data.train_batch_size, group_n, is_train=True, env_kwargs=env_kwargs, resources_per_worker=resources_per_worker)  # noqa: E501
    _val_envs = build_alfworld_envs(alf_config_path, config.env.seed + 1000, config.data.val_batch_size, 1, is_train=False, env_kwargs=env_kwargs, resources_per_worker=resources_per_worker)  # noqa: E501
    built += [(_envs, 4), (_val_envs, 3)]

    env_kwargs = {
        "dim_room": config.env.sokoban.dim_room,
        "num_boxes": config.env.sokoban.num_boxes,
        "max_steps": config.env.max_steps,
        "search_depth": config.env.sokoban.search_depth,
    }
    _envs = build_sokoban_envs(config.env.seed, config.data.train_batch_size, group_n, mode=config.env.sokoban.mode, is_train=True, env_kwargs=env_kwargs, resources_per_worker=resources_per_worker)  # noqa: E501
    _val_envs = build_sokoban_envs(config.env.seed + 1000, config.data.val_batch_size, 1, mode=config.env.sokoban.mode, is_train=False, env_kwargs=env_kwargs, resources_per_worker=resources_per_worker)  # noqa: E501
    built += [(_envs, 4), (_val_envs, 3)]

    env_kwargs = {
        "observation_mode": "text",
        "num_products": None,
        "human_goals": config.env.webshop.human_goals,
        "file_path": str(webshop_data / "items_shuffle_1000.json"),
        "attr_path": str(webshop_data / "items_ins_v2_1000.json"),
    }
    _envs = build_webshop_envs(seed=config.env.seed, env_num=config.data.train_batch_size, group_n=group_n, is_train=True, env_kwargs=env_kwargs, resources_per_worker=resources_per_worker)  # noqa: E501
    _val_envs = build_webshop_envs(seed=config.env.seed + 1000, env_num=config.data.val_batch_size, group_n=1, is_train=False, env_kwargs=env_kwargs, resources_per_worker=resources_per_worker)  # noqa: E501
    built += [(_envs, 4), (_val_envs, 3)]

    for envs, n in built:
        first = envs.reset()
        assert len(first[0]) == n, type(envs).__name__
        envs.close()
