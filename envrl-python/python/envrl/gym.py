"""The engines under gymnasium's interfaces (gymnasium >= 1.0: ``pip install envrl[gym]``).

- ``TextEnv(env)``: one engine (``AlfWorldEnv``, ``WebShopEnv``, ``KeyDoorEnv``) as a
  ``gymnasium.Env`` whose observations and actions are texts; it passes
  ``gymnasium.utils.env_checker.check_env``.
- ``TextVectorEnv(vec)``: a batch (``AlfWorldVecEnv``, ``WebShopVecEnv``) as a
  ``gymnasium.vector.VectorEnv`` with next-step autoreset, stepped in parallel in Rust: it plays
  exactly what gymnasium's own ``SyncVectorEnv`` plays over the single environments of the same
  seeds.

```python
from envrl.alfworld import AlfWorldVecEnv
from envrl.gym import TextVectorEnv

envs = TextVectorEnv(AlfWorldVecEnv(8, seed=0))
observations, infos = envs.reset(seed=0)
commands = [admissible[0] for admissible in infos["admissible_commands"]]
observations, rewards, terminations, truncations, infos = envs.step(commands)
```
"""

import string
from typing import Any, Dict, List, Optional, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

__all__ = ["AnyText", "TextEnv", "TextVectorEnv"]

#: The longest observation or command the spaces admit (WebShop's pages are the longest texts,
#: a few thousand characters).
MAX_TEXT = 1 << 16


class AnyText(spaces.Text):
    """A text of at most ``max_length`` characters of any kind: observations and commands hold
    punctuation, newlines, tabs and, in WebShop, any Unicode, which ``spaces.Text``'s
    character set cannot list. Samples are drawn from the printable ASCII characters."""

    def __init__(self, max_length: int = MAX_TEXT, seed: Optional[int] = None):
        super().__init__(max_length=max_length, min_length=0, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length


class TextEnv(gymnasium.Env):
    """One envrl engine as a ``gymnasium.Env``: ``reset(seed=, options=)`` and ``step(command)``
    are the engine's own (its info dicts included); the spaces are texts."""

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self, env: Any):
        self.env = env
        self.observation_space = AnyText()
        self.action_space = AnyText()

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        return self.env.reset(seed=seed, options=options)

    def step(self, action: str):
        return self.env.step(action)


def batched_infos(infos: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """gymnasium's vector form of per-environment info dicts: each key's values in an array
    (of objects unless all are numbers or booleans), with a boolean mask ``_key`` of the
    environments that reported it."""
    keys: List[str] = []
    for info in infos:
        keys.extend(k for k in info if k not in keys)
    out: Dict[str, Any] = {}
    for key in keys:
        values = [info.get(key) for info in infos]
        present = np.array([key in info for info in infos])
        plain = all(isinstance(v, (bool, int, float)) for v in values)
        array = np.array(values) if plain else np.empty(len(values), dtype=object)
        if not plain:
            array[:] = values
        out[key], out[f"_{key}"] = array, present
    return out


class TextVectorEnv(VectorEnv):
    """A batch of envrl engines as a ``gymnasium.vector.VectorEnv`` with next-step autoreset
    (``metadata["autoreset_mode"]``): the step after an episode ends ignores that
    environment's action and returns its next episode's first observation, reward 0. The
    environments step in parallel in Rust, without the GIL."""

    metadata: Dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, vec: Any):
        self.vec = vec
        self.num_envs = vec.num_envs
        self.single_observation_space = AnyText()
        self.single_action_space = AnyText()
        self.observation_space = spaces.Tuple([AnyText()] * self.num_envs)
        self.action_space = spaces.Tuple([AnyText()] * self.num_envs)

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        """Starts an episode everywhere, drawn from each environment's stream (reseeded with
        ``seed``: environment ``i`` gets ``seed + i // group_n``); ``options`` may name the
        episodes as the batch's ``reset`` takes them (``{"games": [...]}`` or ``{"goals": [...]}``)."""
        super().reset(seed=seed)
        observations, infos = self.vec.reset(**(options or {}), seed=seed)
        return tuple(observations), batched_infos(infos)

    def step(self, actions: Sequence[str]):
        observations, rewards, terminated, truncated, infos = self.vec.step(
            list(actions), autoreset=True
        )
        return (
            tuple(observations),
            np.array(rewards, dtype=np.float64),
            np.array(terminated, dtype=np.bool_),
            np.array(truncated, dtype=np.bool_),
            batched_infos(infos),
        )
