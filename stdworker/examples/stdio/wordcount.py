#!/usr/bin/env python3
"""A stdio program in Python: the example.wordcount kind's reconcile.

stdworker runs it once per task with a JSON request on stdin (see
docs/stdworker.md) and reads a JSON response from stdout. Exit 0 applies the
response, exit 2 fails the resource terminally (with what we print on
stderr), any other exit (an uncaught exception exits 1) is retried.
"""
import json
import sys


def main() -> int:
    req = json.load(sys.stdin)
    text = req["spec"].get("text", "")
    if not isinstance(text, str):
        print("spec.text: must be a string", file=sys.stderr)
        return 2
    top = req["config"].get("top", 3)
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?\"'()")
        if word:
            counts[word] = counts.get(word, 0) + 1
    common = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    json.dump(
        {
            "status": {
                "words": sum(counts.values()),
                "lines": len(text.splitlines()),
                "most_common": [w for w, _ in common],
            },
            "conditions": [
                {
                    "type": "Counted",
                    "status": "True",
                    "reason": "Counted",
                    "message": f"{len(counts)} distinct words",
                }
            ],
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
