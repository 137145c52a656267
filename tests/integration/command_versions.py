"""The previous and the next version of the Command schema, derived from
schemas/Command.avsc exactly as tests/fuzz/command_versions.h derives them
for the C tests: the previous one lacks Task's optional fields (retry,
attempt, metadata, kafka_target, late_policy, on_success); the next one adds Task.priority, Callback.tags and
Cancel.reason, with defaults, and lists the payload union as [Cancel, Submit].
Used by the schema-evolution tests and the fuzz corpus generator."""
import copy
import json
import os

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas")


def current():
    with open(os.path.join(SCHEMAS, "Command.avsc")) as f:
        return json.load(f)


def _task(command):
    branches = command["fields"][0]["type"]
    submit = next(b for b in branches if b["name"] == "Submit")
    return submit["fields"][0]["type"]


def previous():
    c = current()
    task = _task(c)
    task["fields"] = [f for f in task["fields"]
                      if f["name"] not in ("retry", "attempt", "metadata", "kafka_target",
                                           "late_policy", "on_success")]
    return c


def next_version():
    c = current()
    task = _task(c)
    due = [f["name"] for f in task["fields"]].index("due_at")
    task["fields"].insert(due + 1, {"name": "priority", "type": "int", "default": 0})
    callback = next(f for f in task["fields"] if f["name"] == "callback")["type"]
    callback["fields"].append({"name": "tags", "type": {"type": "array", "items": "string"},
                               "default": []})
    branches = c["fields"][0]["type"]
    cancel = branches.pop(1)
    cancel["fields"].append({"name": "reason", "type": ["null", "string"], "default": None})
    branches.insert(0, cancel)
    return copy.deepcopy(c)
