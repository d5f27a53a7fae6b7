"""OpenEnv's own Python server (openenv 0.10.0's create_app, uvicorn, one worker) running its
simplest example environment — the template's echo environment, which does nothing but echo the
action's message — as the ceiling any Python environment server reaches, for `envrl bench serve`.

Usage: python openenv_echo_server.py PORT MAX_SESSIONS
"""

import sys
from typing import Any, Optional
from uuid import uuid4

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class EchoAction(Action):
    message: str = Field(..., description="Message to echo back")


class EchoObservation(Observation):
    echoed_message: str = Field(default="")
    message_length: int = Field(default=0)


class EchoEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self):
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any):
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return EchoObservation(echoed_message="ready", message_length=0, done=False, reward=0.0)

    def step(self, action: EchoAction, **kwargs: Any):
        self._state.step_count += 1
        message = action.message
        return EchoObservation(
            echoed_message=message, message_length=len(message), done=False, reward=0.1 * len(message)
        )

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    port, sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", ws_max_queue=1024)
