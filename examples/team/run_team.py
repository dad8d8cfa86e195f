"""Run the team on models of your choice, outside the demo.

    python examples/team/run_team.py "a tiny todo-list library" \
        --architect-model openai:gpt-4o-mini --coder-model openai:gpt-4o-mini \
        --reviewer-model openai:gpt-4o --store sqlite:///team.db --out ./todo

Without a ``--ROLE-model`` option, the role follows its script in the package
(``ratchet/demo/team_ROLE.json``). The workflow is ``ratchet.demo.team:team``
(package code: any worker loads it); a run killed half-way is finished by
``ratchet resume TASK --store URL``, which replays every model call already
paid for and every module already written.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from ratchet import Runtime
from ratchet.demo.team_story import TeamModels


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("goal")
    parser.add_argument("--architect-model")
    parser.add_argument("--coder-model")
    parser.add_argument("--reviewer-model")
    parser.add_argument("--store", default="sqlite:///team.db")
    parser.add_argument("--out", default="team-package")
    parser.add_argument("--max-concurrency", type=int, default=2)
    args = parser.parse_args()
    roles = TeamModels(args.architect_model, args.coder_model, args.reviewer_model).resolved()
    async with Runtime(args.store) as runtime:
        task = await runtime.run(
            "ratchet.demo.team:team",
            {"goal": args.goal, **roles, "directory": args.out, "max_concurrency": args.max_concurrency},
        )
    print(f"task {task.id} {task.status_text}")
    print(json.dumps(task.result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
