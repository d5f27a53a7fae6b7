"""Type stubs of envrl's Rust extension (the classes re-exported by envrl.alfworld,
envrl.webshop and envrl.keydoor)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str

Info = Dict[str, Any]
StepResult = Tuple[str, float, bool, bool, Info]
BatchStepResult = Tuple[List[str], List[float], List[bool], List[bool], List[Info]]
Path = Union[str, "PathLike[str]"]

def project_action(response: str, fallback_chars: int = 30) -> Tuple[str, bool]:
    """verl-agent's projection: (action, format-valid) of a model reply."""

class AlfWorldEnv:
    """One ALFWorld environment. info: admissible_commands, won, gamefile, game_index,
    task_type, task, score, moves. Reward 10 on the winning step."""

    def __init__(
        self,
        data: Optional[Path] = None,
        split: str = "train",
        task_types: Optional[Sequence[str]] = None,
        max_steps: int = 50,
        generated: int = 1000,
        seed: int = 0,
    ) -> None: ...
    def reset(
        self, seed: Optional[int] = None, options: Optional[Dict[str, Union[int, str]]] = None
    ) -> Tuple[str, Info]: ...
    def step(self, action: str) -> StepResult: ...
    @property
    def admissible_commands(self) -> List[str]: ...
    def expert_plan(self) -> Optional[List[str]]: ...
    @property
    def game_names(self) -> List[str]: ...
    def __len__(self) -> int: ...

class AlfWorldVecEnv:
    """n ALFWorld environments stepped in parallel; environment i draws games from the stream
    of seed + i // group_n."""

    def __init__(
        self,
        n: int,
        data: Optional[Path] = None,
        split: str = "train",
        task_types: Optional[Sequence[str]] = None,
        max_steps: int = 50,
        generated: int = 1000,
        seed: int = 0,
        group_n: int = 1,
    ) -> None: ...
    def reset(
        self, games: Optional[Sequence[Union[int, str]]] = None, seed: Optional[int] = None
    ) -> Tuple[List[str], List[Info]]: ...
    def step(self, actions: Sequence[str], autoreset: bool = False) -> BatchStepResult: ...
    @property
    def admissible_commands(self) -> List[List[str]]: ...
    def expert_plans(self) -> List[Optional[List[str]]]: ...
    @property
    def game_names(self) -> List[str]: ...
    @property
    def num_envs(self) -> int: ...
    def __len__(self) -> int: ...

class WebShopEnv:
    """One WebShop environment (the reference's, of environment seed `seed`). info:
    available_actions {has_search_bar, clickables}, task_score, won, goal, instruction, noop.
    Reward: the purchase's score (0-1)."""

    def __init__(
        self,
        data: Optional[Path] = None,
        observation_mode: str = "text",
        split: str = "train",
        max_steps: int = 15,
        seed: int = 0,
        products: int = 1000,
    ) -> None: ...
    def reset(
        self, seed: Optional[int] = None, options: Optional[Dict[str, int]] = None
    ) -> Tuple[str, Info]: ...
    def step(self, action: str) -> StepResult: ...
    def available_actions(self) -> Dict[str, Any]: ...
    def expert_plan(self) -> List[str]: ...
    @property
    def num_goals(self) -> int: ...

class WebShopVecEnv:
    """n WebShop environments stepped in parallel; environment i is the reference's of seed
    seed + i // group_n."""

    def __init__(
        self,
        n: int,
        data: Optional[Path] = None,
        observation_mode: str = "text",
        split: str = "train",
        max_steps: int = 15,
        seed: int = 0,
        products: int = 1000,
        group_n: int = 1,
    ) -> None: ...
    def reset(
        self, goals: Optional[Sequence[int]] = None, seed: Optional[int] = None
    ) -> Tuple[List[str], List[Info]]: ...
    def step(self, actions: Sequence[str], autoreset: bool = False) -> BatchStepResult: ...
    @property
    def num_envs(self) -> int: ...
    @property
    def num_goals(self) -> int: ...
    def __len__(self) -> int: ...

class KeyDoorEnv:
    """The key-and-door test world."""

    def __init__(self, rooms: int = 4, max_steps: int = 12, seed: int = 0) -> None: ...
    def reset(
        self, seed: Optional[int] = None, options: Optional[Dict[str, int]] = None
    ) -> Tuple[str, Info]: ...
    def step(self, action: str) -> StepResult: ...

class SokobanEnv:
    """Sokoban as verl-agent plays it (integer actions: 0 still, 1 up, 2 down, 3 left, 4 right)."""

    def __init__(
        self,
        dim_room: Tuple[int, int] = (6, 6),
        num_boxes: int = 1,
        max_steps: int = 15,
        search_depth: int = 30,
    ) -> None: ...
    def reset(self, seed: int) -> Tuple[str, Info]: ...
    def step(self, action: int) -> Tuple[str, float, bool, Info]: ...
    def render(self) -> str: ...
    @property
    def room_seed(self) -> int: ...
    @property
    def room_fixed(self) -> List[List[int]]: ...
    @property
    def room_state(self) -> List[List[int]]: ...
    def solve(self) -> List[int]: ...

def sokoban_project(response: str) -> Tuple[int, bool]: ...
