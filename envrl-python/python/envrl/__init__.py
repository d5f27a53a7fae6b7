"""envrl: byte-exact ALFWorld, WebShop and Sokoban engines (Rust), gymnasium-style and batched.

- ``envrl.alfworld``: ``AlfWorldEnv`` and ``AlfWorldVecEnv``; ``envrl._envrl.project_action`` is
  verl-agent's projection of a reply.
- ``envrl.webshop``: ``WebShopEnv``, ``WebShopVecEnv``.
- ``envrl.keydoor``: ``KeyDoorEnv``, a small test world.
- ``envrl.sokoban``: ``SokobanEnv``, Sokoban as verl-agent plays it.
- ``envrl.gym``: ``TextEnv`` and ``TextVectorEnv``, the engines as ``gymnasium.Env`` and
  ``gymnasium.vector.VectorEnv`` (next-step autoreset), with text spaces (needs gymnasium).
- ``envrl.verl_agent``: ``build_alfworld_envs``, ``build_webshop_envs`` and
  ``build_sokoban_envs`` with verl-agent's signatures, return shapes and seeding, plus its
  action projections.
"""

from envrl._envrl import (
    AlfWorldEnv,
    AlfWorldVecEnv,
    KeyDoorEnv,
    SokobanEnv,
    WebShopEnv,
    WebShopVecEnv,
    __version__,
)

__all__ = [
    "AlfWorldEnv",
    "AlfWorldVecEnv",
    "KeyDoorEnv",
    "SokobanEnv",
    "WebShopEnv",
    "WebShopVecEnv",
    "__version__",
]
