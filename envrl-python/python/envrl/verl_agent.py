"""A drop-in for verl-agent's ALFWorld, WebShop and Sokoban environments, on envrl's engines.

verl-agent builds its environments with ``build_alfworld_envs``, ``build_webshop_envs`` and
``build_sokoban_envs`` from ``agent_system.environments.env_package``; its environment managers
and projections then drive them. Swap the imports and everything else runs unchanged, with no
Ray, no TextWorld, no JVM and no gym::

    from envrl.verl_agent import build_alfworld_envs, alfworld_projection
    from envrl.verl_agent import build_webshop_envs, webshop_projection
    from envrl.verl_agent import build_sokoban_envs, sokoban_projection

What is kept from verl-agent (state of 2025-07):

- the signatures (``alf_config_path, seed, env_num, group_n, resources_per_worker, is_train,
  env_kwargs``; the older form without ``resources_per_worker`` works too);
- the seeding rule: environment ``i`` is seeded ``seed + i // group_n``, so a group of
  ``group_n`` environments plays one game (ALFWorld) or one goal (WebShop);
- the return shapes: ALFWorld ``reset() -> (text_obs, None, infos)`` and ``step(actions) ->
  (text_obs, None, rewards, dones, infos)``; WebShop ``reset() -> (obs, infos)`` and
  ``step(actions) -> (obs, rewards, dones, infos)``; rewards ``10 * won``;
- the info keys: ALFWorld ``won``, ``admissible_commands``, ``extra.gamefile``,
  ``observation_text``; WebShop ``available_actions``, ``task_score``, ``won``;
- WebShop's goal draw (``numpy.random.RandomState(seed).choice(goal_idxs, env_num,
  replace=False)`` repeated ``group_n`` times) and its splits (test goals ``0..500``, train
  ``500..``); ALFWorld's game order per seed (TextWorld's shuffled cycle with
  ``numpy.random.RandomState(seed + i // group_n)``) over envrl's sorted game list.

``env_kwargs`` may carry ``data`` (the ALFWorld or WebShop data directory; otherwise
``$ALFWORLD_DATA`` / ``$WEBSHOP_DATA`` or envrl's generated default), and for ALFWorld
``eval_dataset`` (``eval_in_distribution`` = valid_seen, ``eval_out_of_distribution`` =
valid_unseen), ``task_types``, ``max_steps`` and ``generated`` (how many games to generate
without data, 1000); for WebShop ``observation_mode`` and what verl-agent's trainer passes:
``num_products`` (``None``: every product of the files), ``human_goals`` (false: the synthetic
goals envrl's engine plays; true is refused) and ``file_path``/``attr_path`` (taken as the data
directory when they name its ``items_shuffle_1000.json`` and ``items_ins_v2_1000.json``); for Sokoban ``dim_room``, ``num_boxes``,
``max_steps`` and ``search_depth`` (verl-agent's defaults: 6×6, 1 box, 100 steps, depth 300;
its config passes 6×6, 1, ``env.max_steps`` and 30). Sokoban's reset seeds are drawn from numpy's
*global* stream, seeded by the constructor, as verl-agent draws them (so a validation set built
after the training set reseeds the stream both draw from, as in verl-agent); its ``mode`` must be
``tiny_rgb_array`` (text) here.

Arguments that would mean nothing are refused, not ignored: unknown ``env_kwargs`` keys (named
with the known ones), an ``is_train`` that is not a bool, sizes below 1, and any call after
``close()``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from envrl._envrl import AlfWorldVecEnv, SokobanEnv, WebShopVecEnv, project_action, sokoban_project

__all__ = [
    "AlfworldEnvs",
    "SokobanEnvs",
    "WebshopEnvs",
    "alfworld_projection",
    "build_alfworld_envs",
    "build_sokoban_envs",
    "build_webshop_envs",
    "sokoban_projection",
    "webshop_projection",
]

_EVAL_SPLITS = {
    "eval_in_distribution": "valid_seen",
    "eval_out_of_distribution": "valid_unseen",
}


def _numpy():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "envrl.verl_agent draws games and goals exactly as verl-agent does, with numpy: "
            "pip install numpy (or envrl[verl-agent])"
        ) from e
    return numpy


def _shuffled_cycle(items: Sequence[int], rng) -> Iterator[int]:
    """TextWorld's ``shuffled_cycle``: shuffle, yield every item, repeat."""
    saved = list(items)
    while True:
        rng.shuffle(saved)
        yield from saved


def _split_positional(resources_per_worker, is_train, env_kwargs):
    """The older signature had no ``resources_per_worker``: a bool there is ``is_train``."""
    if isinstance(resources_per_worker, bool):
        if isinstance(is_train, dict):
            env_kwargs = is_train
        return None, resources_per_worker, env_kwargs
    return resources_per_worker, is_train, env_kwargs


def _checked_kwargs(env_kwargs, known: Sequence[str], what: str) -> Dict[str, Any]:
    """``env_kwargs`` as a dict whose keys are all among ``known``."""
    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, dict):
        raise TypeError(f"{what} env_kwargs must be a dict, got {type(env_kwargs).__name__}")
    unknown = sorted(set(env_kwargs) - set(known))
    if unknown:
        raise ValueError(
            f"unknown {what} env_kwargs {unknown}; expected some of: {', '.join(known)}"
        )
    return dict(env_kwargs)


def _checked_sizes(is_train, **sizes: int) -> bool:
    """``is_train`` as a bool, and every size an int of at least 1."""
    if not isinstance(is_train, bool):
        raise TypeError(f"is_train must be a bool, got {is_train!r}")
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int of at least 1, got {value!r}")
    return is_train


class _Closable:
    """Refuses every call after ``close()``."""

    _closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} is closed; build a new one")

    def close(self, timeout_s: float = 30) -> None:
        """Nothing to shut down (the engines live in this process); later calls are refused."""
        self._closed = True


_ALFWORLD_KWARGS = ("data", "eval_dataset", "task_types", "max_steps", "generated")
_WEBSHOP_KWARGS = (
    "data",
    "observation_mode",
    "num_products",
    "human_goals",
    "file_path",
    "attr_path",
)
_WEBSHOP_FILES = {"file_path": "items_shuffle_1000.json", "attr_path": "items_ins_v2_1000.json"}


def _webshop_data(env_kwargs: Dict[str, Any]) -> Optional[str]:
    """The WebShop data directory ``env_kwargs`` names, checking what envrl cannot honour."""
    if env_kwargs.get("num_products") is not None:
        raise ValueError(
            "num_products must be None: envrl's engine loads every product of the data files"
        )
    if env_kwargs.get("human_goals"):
        raise ValueError(
            "human_goals=True is not supported: envrl's engine plays WebShop's synthetic goals "
            "(verl-agent's default, human_goals=False)"
        )
    data = env_kwargs.get("data")
    for key, name in _WEBSHOP_FILES.items():
        path = env_kwargs.get(key)
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.basename(path) != name:
            raise ValueError(
                f"{key}={path!r}: envrl reads the 1000-product catalog; expected a path to {name}"
            )
        if data is not None and os.path.abspath(data) != folder:
            raise ValueError(f"{key}={path!r} is not inside data={data!r}")
        data = folder
    return data or os.environ.get("WEBSHOP_DATA") or None


class AlfworldEnvs(_Closable):
    """verl-agent's ``AlfworldEnvs`` on envrl's engine: ``env_num * group_n`` environments."""

    def __init__(
        self,
        alf_config_path: Optional[str] = None,
        seed: int = 0,
        env_num: int = 1,
        group_n: int = 1,
        resources_per_worker: Any = None,
        is_train: bool = True,
        env_kwargs: Optional[Dict[str, Any]] = None,
    ) -> None:
        _, is_train, env_kwargs = _split_positional(resources_per_worker, is_train, env_kwargs)
        env_kwargs = _checked_kwargs(env_kwargs, _ALFWORLD_KWARGS, "ALFWorld")
        is_train = _checked_sizes(is_train, env_num=env_num, group_n=group_n)
        if is_train:
            split = "train"
        else:
            dataset = env_kwargs.get("eval_dataset", "eval_in_distribution")
            if dataset not in _EVAL_SPLITS:
                raise ValueError(
                    f"unknown eval_dataset {dataset!r}; expected one of: {', '.join(_EVAL_SPLITS)}"
                )
            split = _EVAL_SPLITS[dataset]
        self.alf_config_path = alf_config_path
        self.num_processes = env_num * group_n
        self.group_n = group_n
        self.env_num = env_num
        self.multi_modal = False
        self._data = env_kwargs.get("data") or os.environ.get("ALFWORLD_DATA") or None
        self._envs = AlfWorldVecEnv(
            self.num_processes,
            data=self._data,
            split=split,
            task_types=env_kwargs.get("task_types"),
            max_steps=int(env_kwargs.get("max_steps", 50)),
            generated=int(env_kwargs.get("generated", 1000)),
            seed=seed,
            group_n=group_n,
        )
        np = _numpy()
        games = range(len(self._envs.game_names))
        self._cycles = [
            _shuffled_cycle(games, np.random.RandomState(seed + g)) for g in range(env_num)
        ]
        self.prev_admissible_commands: List[Optional[List[str]]] = [None] * self.num_processes

    def _gamefile(self, name: str) -> str:
        if self._data:
            return os.path.join(self._data, "json_2.1.1", name)
        return name

    def _infos(self, obs: List[str], infos: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        out = []
        for i, (text, info) in enumerate(zip(obs, infos)):
            self.prev_admissible_commands[i] = info["admissible_commands"]
            out.append(
                {
                    "won": info["won"],
                    "admissible_commands": info["admissible_commands"],
                    "extra.gamefile": self._gamefile(info["gamefile"]),
                    "observation_text": text,
                    "moves": info["moves"],
                    "task_type": info["task_type"],
                }
            )
        return out

    def reset(self) -> Tuple[List[str], None, List[Dict[str, Any]]]:
        """Starts a new game in every environment; a group shares its game."""
        self._check_open()
        group_games = [next(cycle) for cycle in self._cycles]
        games = [group_games[i // self.group_n] for i in range(self.num_processes)]
        obs, infos = self._envs.reset(games)
        return obs, None, self._infos(obs, infos)

    def step(self, actions: List[str]):
        """One command per environment; returns ``(text_obs, None, rewards, dones, infos)``."""
        self._check_open()
        if len(actions) != self.num_processes:
            raise ValueError(
                f"the num of actions ({len(actions)}) must be equal to the num of processes "
                f"({self.num_processes})"
            )
        obs, _, terminated, truncated, infos = self._envs.step(actions)
        infos = self._infos(obs, infos)
        rewards = [10.0 * float(info["won"]) for info in infos]
        dones = [t or u for t, u in zip(terminated, truncated)]
        return obs, None, rewards, dones, infos

    @property
    def get_admissible_commands(self) -> List[Optional[List[str]]]:
        return self.prev_admissible_commands

    def getobs(self):
        return None


class WebshopEnvs(_Closable):
    """verl-agent's ``WebshopMultiProcessEnv`` on envrl's engine."""

    def __init__(
        self,
        seed: int = 0,
        env_num: int = 1,
        group_n: int = 1,
        resources_per_worker: Any = None,
        is_train: bool = True,
        env_kwargs: Optional[Dict[str, Any]] = None,
    ) -> None:
        _, is_train, env_kwargs = _split_positional(resources_per_worker, is_train, env_kwargs)
        env_kwargs = _checked_kwargs(env_kwargs, _WEBSHOP_KWARGS, "WebShop")
        self.is_train = _checked_sizes(is_train, env_num=env_num, group_n=group_n)
        np = _numpy()
        self.group_n = group_n
        self.env_num = env_num
        self.num_processes = env_num * group_n
        self._rng = np.random.RandomState(seed)
        data = _webshop_data(env_kwargs)
        self._envs = WebShopVecEnv(
            self.num_processes,
            data=data,
            observation_mode=env_kwargs.get("observation_mode", "text"),
            split="all",
            # verl-agent cuts episodes itself (env.max_steps); the environment never does.
            max_steps=2**31,
            seed=seed,
            group_n=group_n,
        )
        total = self._envs.num_goals
        self.goal_idxs = range(500) if not self.is_train else range(500, total)

    def reset(self) -> Tuple[List[str], List[Dict[str, Any]]]:
        """Draws ``env_num`` distinct goals; each group of ``group_n`` shares one."""
        self._check_open()
        np = _numpy()
        idx = self._rng.choice(self.goal_idxs, size=self.env_num, replace=False)
        idx = np.repeat(idx, self.group_n).tolist()
        obs, infos = self._envs.reset(idx)
        infos = [{"available_actions": i["available_actions"], "won": False} for i in infos]
        return obs, infos

    def step(self, actions: List[str]):
        """One action per environment; returns ``(obs, rewards, dones, infos)``."""
        self._check_open()
        if len(actions) != self.num_processes:
            raise ValueError(f"Expected {self.num_processes} actions, got {len(actions)}")
        obs, scores, dones, _, infos = self._envs.step(actions)
        rewards, out = [], []
        for score, done, info in zip(scores, dones, infos):
            won = bool(done and score == 1.0)
            rewards.append(10.0 if won else 0)
            out.append(
                {
                    "available_actions": info["available_actions"],
                    "task_score": score,
                    "won": won,
                }
            )
        return obs, rewards, dones, out


def build_alfworld_envs(
    alf_config_path=None,
    seed=0,
    env_num=1,
    group_n=1,
    resources_per_worker=None,
    is_train=True,
    env_kwargs=None,
) -> AlfworldEnvs:
    """verl-agent's ``build_alfworld_envs``; ``alf_config_path`` is accepted and not needed."""
    return AlfworldEnvs(
        alf_config_path, seed, env_num, group_n, resources_per_worker, is_train, env_kwargs
    )


def build_webshop_envs(
    seed=0, env_num=1, group_n=1, resources_per_worker=None, is_train=True, env_kwargs=None
) -> WebshopEnvs:
    """verl-agent's ``build_webshop_envs``."""
    return WebshopEnvs(seed, env_num, group_n, resources_per_worker, is_train, env_kwargs)


def alfworld_projection(actions: List[str], action_pools: Optional[List[List[str]]] = None):
    """verl-agent's ALFWorld projection: ``(actions, valids)`` from the model's replies."""
    projected = [project_action(a, 30) for a in actions]
    return [a for a, _ in projected], [int(v) for _, v in projected]


def webshop_projection(actions: List[str]):
    """verl-agent's WebShop projection: ``(actions, valids)`` from the model's replies."""
    projected = [project_action(a, 20) for a in actions]
    return [a for a, _ in projected], [int(v) for _, v in projected]


_SOKOBAN_KWARGS = ("dim_room", "num_boxes", "max_steps", "search_depth")


class SokobanEnvs(_Closable):
    """verl-agent's ``SokobanMultiProcessEnv`` on envrl's engine: ``env_num * group_n`` rooms."""

    def __init__(
        self,
        seed: int = 0,
        env_num: int = 1,
        group_n: int = 1,
        mode: str = "tiny_rgb_array",
        is_train: bool = True,
        env_kwargs: Optional[Dict[str, Any]] = None,
    ) -> None:
        if mode != "tiny_rgb_array":
            raise ValueError(
                f"mode {mode!r}: envrl's Sokoban is text only; use mode='tiny_rgb_array'"
            )
        env_kwargs = _checked_kwargs(env_kwargs, _SOKOBAN_KWARGS, "Sokoban")
        self.is_train = _checked_sizes(is_train, env_num=env_num, group_n=group_n)
        self.group_n = group_n
        self.env_num = env_num
        self.num_processes = env_num * group_n
        self.mode = mode
        self._np = _numpy()
        self._np.random.seed(seed)
        kwargs = {
            "dim_room": tuple(env_kwargs.get("dim_room", (6, 6))),
            "num_boxes": int(env_kwargs.get("num_boxes", 3)),
            "max_steps": int(env_kwargs.get("max_steps", 100)),
            "search_depth": int(env_kwargs.get("search_depth", 300)),
        }
        self._envs = [SokobanEnv(**kwargs) for _ in range(self.num_processes)]

    def reset(self) -> Tuple[List[str], List[Dict[str, Any]]]:
        self._check_open()
        np = self._np
        if self.is_train:
            seeds = np.random.randint(0, 2**16 - 1, size=self.env_num)
        else:
            seeds = np.random.randint(2**16, 2**32 - 1, size=self.env_num)
        seeds = np.repeat(seeds, self.group_n).tolist()
        results = [env.reset(int(s)) for env, s in zip(self._envs, seeds)]
        return [obs for obs, _ in results], [info for _, info in results]

    def step(self, actions: Sequence[int]):
        self._check_open()
        if len(actions) != self.num_processes:
            raise ValueError(
                f"expected {self.num_processes} actions (one per environment), got {len(actions)}"
            )
        results = [env.step(a) for env, a in zip(self._envs, actions)]
        obs, rewards, dones, infos = (list(x) for x in zip(*results))
        return obs, rewards, dones, infos

    def render(self, mode: str = "tiny_rgb_array", env_idx: Optional[int] = None):
        self._check_open()
        if mode != "tiny_rgb_array":
            raise ValueError(f"mode {mode!r}: envrl's Sokoban renders text only")
        if env_idx is not None:
            return self._envs[env_idx].render()
        return [env.render() for env in self._envs]


def build_sokoban_envs(
    seed=0,
    env_num=1,
    group_n=1,
    mode="tiny_rgb_array",
    resources_per_worker=None,
    is_train=True,
    env_kwargs=None,
) -> SokobanEnvs:
    """verl-agent's ``build_sokoban_envs`` (its signature since 2025-08-21, with
    ``resources_per_worker``, which needs no Ray here; the older positional form ``seed,
    env_num, group_n, mode, is_train, env_kwargs`` works too)."""
    _, is_train, env_kwargs = _split_positional(resources_per_worker, is_train, env_kwargs)
    return SokobanEnvs(seed, env_num, group_n, mode, is_train, env_kwargs)


def sokoban_projection(actions: List[str]):
    """verl-agent's Sokoban projection: ``(action ids, valids)`` from the model's replies."""
    projected = [sokoban_project(a) for a in actions]
    return [a for a, _ in projected], [int(v) for _, v in projected]
