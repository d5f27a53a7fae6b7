"""Plays a served envrl world with OpenEnv's own client (openenv 0.10.0's GenericEnvClient).

Usage: openenv_client_check.py URL

Episodes of raw commands (the admissible ones in turn, and one the world does not accept) and
of model replies; two sessions that send the same commands see the same observations, rewards
and ends; the server's errors reach the client as OpenEnv raises them.
"""

import sys

from openenv.core.generic_client import GenericEnvClient


def play(env, index, view="raw"):
    """One episode of the eval split's task `index`: every (observation, reward, done)."""
    result = env.reset(split="eval", index=index, view=view)
    seen = [(result.observation["text"], result.reward, result.done)]
    t = 0
    while not result.done:
        admissible = result.observation["admissible"]
        if admissible and t % 4 != 3:
            command = admissible[t % len(admissible)]
        else:
            command = "do a barrel roll"
        result = env.step({"action": command})
        assert result.observation["action"] == command, result.observation
        seen.append((result.observation["text"], result.reward, result.done))
        t += 1
    return seen


def main(url):
    with GenericEnvClient(base_url=url).sync() as a, GenericEnvClient(base_url=url).sync() as b:
        steps = 0
        for index in range(4):
            first, second = play(a, index), play(b, index)
            assert first == second, f"task {index}: two sessions differ"
            steps += len(first) - 1
        # A reply goes through the world's projection, and is marked when unreadable.
        result = a.reset(split="eval", index=0)
        assert isinstance(result.observation["text"], str) and result.observation["text"]
        result = a.step({"reply": "no idea"})
        assert result.observation["valid"] in (True, False)
        state = a.state()
        assert state["step_count"] == 1, state
        # Errors arrive as OpenEnv's client raises them.
        for bad, code in [({"reply": 1}, "VALIDATION_ERROR"), ({}, "VALIDATION_ERROR")]:
            try:
                a.step(bad)
            except RuntimeError as e:
                assert code in str(e), e
            else:
                raise AssertionError(f"{bad} was accepted")
        print(f"  {steps} steps over 4 episodes in two sessions, equal; replies, state, errors ok")


if __name__ == "__main__":
    main(sys.argv[1])
