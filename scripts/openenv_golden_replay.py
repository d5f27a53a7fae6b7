"""Replays the golden transcripts through `envrl serve` with OpenEnv's own client (openenv
0.10.0's GenericEnvClient, over its WebSocket session) and checks every step against the
reference's recording, byte for byte: ALFWorld's 308 transcripts, WebShop's 103 recorded episodes
and verl-agent's scripted four-worker run, and Sokoban's recorded episodes of four room
configurations. Each world is served on a free loopback port on the data it was recorded on.

Usage: openenv_golden_replay.py ENVRL_BINARY SHARED_DIR
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import zstandard
from openenv.core.generic_client import GenericEnvClient


def read_jsonl(path):
    """The records of a `.jsonl` or `.jsonl.zst` file."""
    path = str(path)
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".zst"):
        data = zstandard.ZstdDecompressor().stream_reader(data).read()
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def expect(got, want, where):
    if got != want:
        raise AssertionError(f"{where}:\n  served   {got!r}\n  recorded {want!r}")


def alfworld_transcripts(golden):
    """The golden ALFWorld transcript files (not the `*_actions.jsonl` inputs of the replays)."""
    kinds = ("_golden.jsonl", "_replay.jsonl", ".jsonl.zst")
    files = sorted(p for p in Path(golden).iterdir() if p.name.endswith(kinds))
    if not files:
        raise AssertionError(f"no golden transcript in {golden}")
    return files


def alfworld(env, _url, golden):
    """Every golden ALFWorld transcript: observation, admissible commands, won, done and the
    reward (10 on the winning step) of every step."""
    episodes = steps = 0
    for path in alfworld_transcripts(golden):
        name = path.name
        for episode in read_jsonl(path):
            game, recorded = episode["game"], episode["steps"]
            result = env.reset(name=game, view="raw", max_steps=episode["max_steps"])
            was_won = False
            for step in recorded:
                where = f"{name} {game} t {step['t']}"
                if step["t"] > 0:
                    result = env.step({"action": step["action"]})
                    want = 10.0 if step["won"] and not was_won else 0.0
                    expect(result.reward, want, f"{where} reward")
                    was_won = step["won"]
                    steps += 1
                obs = result.observation
                expect(obs["text"], step["observation"], f"{where} observation")
                expect(obs["admissible"], step["admissible_commands"], f"{where} admissible")
                expect(obs["won"], step["won"], f"{where} won")
                expect(result.done, step["done"], f"{where} done")
                expect(obs["metadata"]["task_name"], game, f"{where} task name")
            episodes += 1
    return episodes, steps


def verl_agent_observation(page, instruction):
    """verl-agent's WebshopEnvironmentManager.format_obs: the page after the instruction, each
    part quoted (the page itself when the instruction is not on it)."""
    parts = page.split(" [SEP] ")
    if instruction not in parts:
        return page
    return " [SEP] ".join(f"'{p}'" for p in parts[parts.index(instruction) + 1 :])


def verl_agent_actions(available):
    """verl-agent's format_avail_actions: the search template, then a click per clickable."""
    search = ["search[<your query>]"] if available["has_search_bar"] else []
    return search + [f"click[{c}]" for c in available["clickables"]]


def webshop_task(seed, goal):
    """envrl's WebShop task id: the environment seed and the goal index."""
    return (seed << 32) | goal


def webshop(env, url, golden):
    """The 103 recorded text-mode episodes (environment seed 1000) in one session, as the
    reference played them in one environment: every page as verl-agent formats it, the
    actions it lists, done, the score and the reward; then the scripted verl-agent run's
    prompts, replies, validity flags, rewards and task scores in four sessions."""
    episodes = steps = 0
    for episode in read_jsonl(f"{golden}/episodes_verl_seed1000_text.jsonl.zst"):
        task = webshop_task(1000, episode["goal_idx"])
        instruction = episode["instruction_text"]
        result = env.reset(task=task, view="raw")
        for step in episode["steps"]:
            where = f"goal {episode['goal_idx']} t {step['t']}"
            obs = result.observation
            expect(obs["text"], verl_agent_observation(step["obs"], instruction), f"{where} page")
            want = verl_agent_actions(step["available_actions"])
            expect(obs["admissible"], want, f"{where} actions")
            result = env.step({"action": step["action"]})
            obs = result.observation
            expect(result.done, step["done"], f"{where} done")
            bought = step["done"] and not isinstance(step["reward"], int)
            expect(obs["score"], step["reward"] if bought else None, f"{where} score")
            expect(result.reward, 10.0 if bought and step["reward"] == 1.0 else 0.0, where)
            if not step["done"]:
                page = verl_agent_observation(step["next_obs"], instruction)
                expect(obs["text"], page, f"{where} next page")
            steps += 1
        episodes += 1
    return episodes, steps + scripted_run(url, golden)


def scripted_run(url, golden):
    """verl-agent's scripted four-worker run in four sessions: every reply's validity, reward,
    done, won, task score, page and prompt; returns the steps compared."""
    records = read_jsonl(f"{golden}/verl_agent_prompts_seed1000.jsonl")
    goals = records[0]["goal_idxs"]
    clients = [GenericEnvClient(base_url=url).sync() for _ in range(4)]
    sessions = [client.__enter__() for client in clients]
    try:
        for i, env in enumerate(sessions):
            result = env.reset(task=webshop_task(1000 + i, goals[i]), view="prompt")
            expect(result.observation["text"], records[0]["prompts"][i], f"worker {i} prompt 0")
            raw = result.observation["metadata"]["raw_observation"]
            expect(raw, records[0]["anchor"][i], f"worker {i} page 0")
        done, compared = [False] * 4, 0
        for record in records[1:]:
            for i, env in enumerate(sessions):
                if done[i]:
                    continue  # the reference's worker reset itself here; a served episode ends
                where = f"step {record['step']} worker {i}"
                result = env.step({"reply": record["responses"][i]})
                obs = result.observation
                expect(obs["valid"], record["is_action_valid"][i], f"{where} valid")
                expect(result.reward, record["rewards"][i], f"{where} reward")
                expect(result.done, record["dones"][i], f"{where} done")
                expect(obs["won"], record["won"][i], f"{where} won")
                expect(obs["score"] or 0.0, record["task_score"][i], f"{where} score")
                raw = obs["metadata"]["raw_observation"]
                expect(raw, record["anchor"][i], f"{where} page")
                if result.done:
                    done[i] = True
                else:
                    expect(obs["text"], record["prompts"][i], f"{where} prompt")
                compared += 1
        return compared
    finally:
        for client in clients:
            client.__exit__(None, None, None)


SOKOBAN_MOVES = ["still", "up", "down", "left", "right"]

# The recorder's room configurations: rows, columns, boxes, step limit, search depth.
SOKOBAN_CONFIGS = {
    "verl-agent": (6, 6, 1, 15, 30),
    "two-boxes": (6, 6, 2, 30, 30),
    "small": (7, 7, 2, 40, 50),
    "wide": (6, 8, 1, 20, 100),
}


def sokoban(env, _url, episodes_file, config):
    """The recorded Sokoban episodes of one room configuration: the first observation and
    prompt, then every step's observation, prompt, reward, done and won. The reference leaves
    the step limit to the rollout loop (some recordings play past it); the server ends the
    episode at its limit, marked truncated, so each reset asks for the recording's length."""
    episodes = steps = 0
    for episode in read_jsonl(episodes_file):
        if episode["config"] != config:
            continue
        at = f"{config} seed {episode['seed']}"
        limit = max(SOKOBAN_CONFIGS[config][3], len(episode["steps"]))
        result = env.reset(task=episode["seed"], view="prompt", max_steps=limit)
        expect(result.observation["text"], episode["prompt"], f"{at} first prompt")
        raw = result.observation["metadata"]["raw_observation"]
        expect(raw, episode["observation"], f"{at} first observation")
        for t, step in enumerate(episode["steps"]):
            where = f"{at} step {t}"
            result = env.step({"action": SOKOBAN_MOVES[step["action"]]})
            obs = result.observation
            expect(obs["metadata"]["raw_observation"], step["observation"], f"{where} obs")
            expect(result.reward, step["reward"], f"{where} reward")
            truncated = t + 1 == limit and not step["done"]
            expect(obs["metadata"]["truncated"], truncated, f"{where} truncated")
            want = (step["done"] or truncated, step["won"])
            expect((result.done, obs["won"]), want, f"{where} done, won")
            if not result.done:
                expect(obs["text"], step["prompt"], f"{where} prompt")
            steps += 1
        episodes += 1
    if episodes == 0:
        raise AssertionError(f"no recorded episode of configuration {config}")
    return episodes, steps


@contextmanager
def served(binary, world, settings, data_env=None):
    """`envrl serve WORLD` on a free loopback port with these `--set` settings: its URL."""
    command = [binary, "serve", world, "--port", "0"]
    for setting in settings:
        command += ["--set", setting]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, **(data_env or {})})
    try:
        for _ in range(1200):
            log.seek(0)
            text = log.read().decode("utf-8", "replace")
            found = re.search(r"^serving .* on (http://127\.0\.0\.1:\d+)", text, re.M)
            if found:
                break
            if process.poll() is not None:
                raise RuntimeError(f"envrl serve {world} exited:\n{text}")
            time.sleep(0.1)
        else:
            raise RuntimeError(f"envrl serve {world} did not start in 120 s:\n{text}")
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def replay(world, url, *args):
    play = {"alfworld": alfworld, "webshop": webshop, "sokoban": sokoban}[world]
    with GenericEnvClient(base_url=url).sync() as env:
        episodes, steps = play(env, url, *args)
    name = f"{world} ({args[-1]})" if world == "sokoban" else world
    print(f"  {name}: {episodes} golden episodes, {steps} steps served equal to the recording")


def main(binary, shared):
    shared = Path(shared)
    golden = shared / "golden"
    alfworld_data = os.environ["ALFWORLD_DATA"]
    limit50 = ["trainer.max_steps=50"]
    every_game = ["env.types=[]", "tasks.eval=134", *limit50]
    with served(binary, "alfworld", every_game, {"ALFWORLD_DATA": alfworld_data}) as url:
        replay("alfworld", url, golden / "alfworld")
    webshop_data = {"WEBSHOP_DATA": str(shared / "data/webshop")}
    with served(binary, "webshop", ["env.prompt=verl-agent", *limit50], webshop_data) as url:
        replay("webshop", url, golden / "webshop")
    episodes = Path(__file__).resolve().parents[1] / "tests/data/sokoban/episodes.jsonl.zst"
    for config, (rows, cols, boxes, limit, depth) in SOKOBAN_CONFIGS.items():
        settings = ["env.prompt=verl-agent", f"env.rows={rows}", f"env.cols={cols}",
                    f"env.boxes={boxes}", f"trainer.max_steps={limit}",
                    f"env.search_depth={depth}"]
        with served(binary, "sokoban", settings) as url:
            replay("sokoban", url, str(episodes), config)


if __name__ == "__main__":
    main(*sys.argv[1:])
