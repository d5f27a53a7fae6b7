#!/usr/bin/env python3
"""One-time migration of run configs written before the world became one value (issue 39).

1. The objectives' settings used to carry the world's facts, copied in by `AuxConfig::for_world`
   and the programs' `adapt_objective`: `environment` (the description), the world's no-op
   observations, its example budgets and inverse dynamics' target form. Those facts now come with
   the data (`envrl::WorldInfo`), and a config holds only what was chosen: `environment` goes,
   and so does every value equal to what the run's world states.
2. The environment's own settings used to be scattered (`env = "alfworld"`, a top-level
   `prompt`, `tasks.types`, `tasks.eval_split`); they are now one `[env]` table tagged by
   `name`, with each world's own fields (and the defaults of the fields that are new).

Each given file is rewritten as a fresh run of the same build writes it, so a run keeps exactly
the settings it had. Files already migrated are left alone.

    python3 scripts/migrate-run-configs.py $(git ls-files '*config.toml')
"""

import re
import sys

# What each world states: no-op observations, budgets, action form.
WORLDS = {
    "alfworld": {"noop": '["Nothing happens."]', "prompt": "1024", "target": "256", "form": '"tagged"'},
    "webshop": {"noop": None, "prompt": "2048", "target": "768", "form": '"tagged"'},
    "keydoor": {"noop": None, "prompt": "1024", "target": "256", "form": '"bare"'},
}


def migrate(text):
    env = re.search(r'^env = "(\w+)"', text, re.M)
    if env is None or "[algorithm.aux.transitions]" not in text:
        return text
    world = WORLDS[env.group(1)]
    drop = {
        "environment": None,
        "noop_observations": world["noop"] or "-",
        "max_prompt_tokens": world["prompt"],
        "max_target_tokens": world["target"],
        "max_obs_tokens": world["target"],
        "target": world["form"],
    }
    out, section = [], None
    for line in text.splitlines(keepends=True):
        header = re.match(r"^\[\[?([\w.]+)\]\]?", line)
        if header:
            section = header.group(1)
        key = re.match(r"^(\w+) = (.*)$", line.rstrip("\n"))
        if section in ("algorithm.aux", "algorithm.aux.transitions") and key:
            name, value = key.groups()
            if name in drop and (drop[name] is None or drop[name] == value):
                if name == "noop_observations":
                    out.append("noop_observations = []\n")
                continue
        out.append(line)
    return "".join(out)


# Each world's settings in the order a run writes them, with the defaults of new fields.
ENV_FIELDS = {
    "alfworld": ["prompt", "types", "eval_split"],
    "webshop": ["prompt"],
    "keydoor": ["rooms"],
    "sokoban": ["prompt", "rows", "cols", "boxes", "search_depth"],
}
NEW_DEFAULTS = {
    "prompt": '"verl-agent"',
    "types": "[]",
    "eval_split": '"valid_unseen"',
    "rooms": "4",
    "rows": "6",
    "cols": "6",
    "boxes": "1",
    "search_depth": "30",
}


def migrate_env(text):
    """Moves `env`, `prompt`, `tasks.types` and `tasks.eval_split` into an `[env]` table."""
    env = re.search(r'^env = "(\w+)"\n', text, re.M)
    if env is None:
        return text
    name = env.group(1)
    found, out, section = {}, [], None
    for line in text.splitlines(keepends=True):
        header = re.match(r"^\[\[?([\w.]+)\]\]?", line)
        if header:
            section = header.group(1)
        key = re.match(r"^(\w+) = (.*)$", line.rstrip("\n"))
        if key and (section, key.group(1)) in {(None, "env"), (None, "prompt"), ("tasks", "types"), ("tasks", "eval_split")}:
            found[key.group(1)] = key.group(2)
            continue
        out.append(line)
    if name == "keydoor" and found.get("prompt", NEW_DEFAULTS["prompt"]) != NEW_DEFAULTS["prompt"]:
        sys.exit(f"a keydoor config with prompt = {found['prompt']}: keydoor has one prompt")
    table = [f'name = "{name}"\n'] + [
        f"{field} = {found.get(field, NEW_DEFAULTS[field])}\n" for field in ENV_FIELDS[name]
    ]
    # Before the first table, as a run writes it (a partial file without tables: at its end).
    first = next((i for i, l in enumerate(out) if re.match(r"^\[", l)), len(out))
    block = ["[env]\n"] + table + ["\n"]
    if first == len(out) and out and out[-1].strip():
        block = ["\n"] + block
    return "".join(out[:first] + block + out[first:])


def main():
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = migrate_env(migrate(text))
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"migrated {path}")


if __name__ == "__main__":
    main()
