"""The replayed model's part in the demo: one episode per agent run, as a model would act.

Each episode is what a capable model does with the real agent's tools: read what it
needs, stage complete files (or sub-issues), submit, and end with a short message; each
verifier reads what it wants to check and ends with its JSON verdict. The bug fix shows
the tests at work: its first try refuses to remove exactly what is in stock, a test the
try itself added fails in the sandbox, the try is rejected by code before any verifier
sees it, and the second try (which starts from the staged files and is told which test
failed) fixes the boundary, runs the tests itself, and is verified with the evidence.

Tool names and arguments are the agents' contract (`agent_loop_common.staging`, the
builder's and reviewer's read tools, the distiller's lesson tools); the strict
`ScriptedModel` under each episode fails the run if a tool is not offered or a result
does not say what the script expects.
"""

from agent_loop.demo_scripts_builder import (
    BUG_PR_TITLE,
    FEATURE_PR_TITLE,
    FORMAT_PR_TITLE,
    SUB_ISSUES,
    builder_episodes,
)
from agent_loop.demo_scripts_followup import distiller_episode, reviewer_episodes

__all__ = [
    "BUG_PR_TITLE",
    "FEATURE_PR_TITLE",
    "FORMAT_PR_TITLE",
    "SUB_ISSUES",
    "builder_episodes",
    "distiller_episode",
    "reviewer_episodes",
]
