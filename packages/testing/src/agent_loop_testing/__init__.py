"""Test doubles shared by every package: GitHub emulator, scripted model (in process, or
served as an OpenAI-compatible API: `serve_chat_model`, or as Anthropic's Messages API
with a simulated prompt cache: `serve_messages_model`, `SimulatedPromptCache`), network guard, and the harness
wiring them to a run (`emulator_settings`, `emulator_runtime`, `ModelSlot`,
`stored_record`, `write_memory_file`, `quiet_logs`), and the end-to-end harness driving
`agent-loop run` against the served emulator (`serve_for_cli`, `CliLoop`, the calc
sample: `CALC_REPO`, `CALC_ISSUE`, `subtract_try`, ...).

The GitHub emulator's names (dulwich, starlette, uvicorn) and the harness (which exists
to drive it, and imports the runtime) are imported on first use, so loading the pytest
plugin or the scripted model stays light and pytest's start-up with it.
"""

from typing import TYPE_CHECKING, Any

from agent_loop_testing._hermetic import (
    NetworkAccessDenied,
    block_network,
    is_loopback_address,
)
from agent_loop_testing._scripted import (
    DEFAULT_ROUTE,
    RecordedCall,
    ScriptedCall,
    ScriptedModel,
    ScriptMismatch,
    Turn,
    call,
    turn,
)

if TYPE_CHECKING:
    from agent_loop_testing._calc_history import CalcFix, CalcHistory, seed_calc_history
    from agent_loop_testing._cgroupfs import (
        proc_without_cgroup,
        read_only_cgroupfs,
        read_only_cgroupfs_works,
    )
    from agent_loop_testing._chat_server import serve_chat_model
    from agent_loop_testing._e2e import (
        CALC,
        CALC_ISSUE,
        CALC_PYPROJECT,
        CALC_REPO,
        CALC_SUB,
        REPORT_FORGERY,
        TESTS,
        TESTS_SUB,
        VERIFIED,
        CliLoop,
        bwrap_e2e_marks,
        bwrap_works,
        serve_for_cli,
        submit_subtract,
        subtract_try,
    )
    from agent_loop_testing._emulator import GitHubEmulator
    from agent_loop_testing._emulator_faults import Fault, LoggedRequest
    from agent_loop_testing._emulator_gitdiff import shown_lines
    from agent_loop_testing._emulator_history import (
        History,
        HistoryEdit,
        HistoryIssue,
        HistoryMerge,
        HistoryPull,
        HistoryPush,
        HistoryStep,
    )
    from agent_loop_testing._emulator_host import GitHubHost
    from agent_loop_testing._emulator_refname import is_valid_ref_name
    from agent_loop_testing._emulator_schema import SchemaMismatch, assert_matches_schema
    from agent_loop_testing._emulator_server import serve_asgi
    from agent_loop_testing._emulator_views import (
        CommitView,
        EmulatedComment,
        EmulatedIssue,
        EmulatedPull,
    )
    from agent_loop_testing._emulator_webhooks import Delivery, sign_payload
    from agent_loop_testing._eval_history import (
        EVAL_HISTORY_OPS,
        EVAL_HISTORY_REPO,
        seed_eval_history,
    )
    from agent_loop_testing._eval_task import ScriptedEvalTask
    from agent_loop_testing._facade import emulator_client, instant_retry
    from agent_loop_testing._harness import (
        ModelSlot,
        emulator_runtime,
        emulator_settings,
        quiet_logs,
        stored_record,
        write_memory_file,
    )
    from agent_loop_testing._held import HeldCall, HeldProgram
    from agent_loop_testing._instant import InstantModel
    from agent_loop_testing._messages_server import (
        MessagesServer,
        serve_messages_model,
        to_call_llm_shape,
        unpaired_tool_result,
    )
    from agent_loop_testing._per_issue import ModelPerArm, ModelPerIssue
    from agent_loop_testing._prompt_cache import (
        CacheCharge,
        SimulatedPromptCache,
        approx_tokens,
        request_blocks,
    )
    from agent_loop_testing._recording_sandbox import RecordingSandbox, SandboxCall
    from agent_loop_testing._vendored import (
        CACHETOOLS_TEST_ARGS,
        VendoredHistory,
        seed_cachetools_history,
    )
    from agent_loop_testing._zero_config import ZERO_CONFIG_CALC, wheelhouse

_LAZY = {
    "shown_lines": "agent_loop_testing._emulator_gitdiff",
    "CalcFix": "agent_loop_testing._calc_history",
    "CalcHistory": "agent_loop_testing._calc_history",
    "seed_calc_history": "agent_loop_testing._calc_history",
    "ModelPerArm": "agent_loop_testing._per_issue",
    "ScriptedEvalTask": "agent_loop_testing._eval_task",
    "EVAL_HISTORY_OPS": "agent_loop_testing._eval_history",
    "EVAL_HISTORY_REPO": "agent_loop_testing._eval_history",
    "seed_eval_history": "agent_loop_testing._eval_history",
    "ModelPerIssue": "agent_loop_testing._per_issue",
    "RecordingSandbox": "agent_loop_testing._recording_sandbox",
    "SandboxCall": "agent_loop_testing._recording_sandbox",
    "CALC": "agent_loop_testing._e2e",
    "CALC_ISSUE": "agent_loop_testing._e2e",
    "CALC_PYPROJECT": "agent_loop_testing._e2e",
    "CALC_REPO": "agent_loop_testing._e2e",
    "CALC_SUB": "agent_loop_testing._e2e",
    "REPORT_FORGERY": "agent_loop_testing._e2e",
    "TESTS": "agent_loop_testing._e2e",
    "TESTS_SUB": "agent_loop_testing._e2e",
    "VERIFIED": "agent_loop_testing._e2e",
    "CliLoop": "agent_loop_testing._e2e",
    "bwrap_e2e_marks": "agent_loop_testing._e2e",
    "bwrap_works": "agent_loop_testing._e2e",
    "serve_for_cli": "agent_loop_testing._e2e",
    "submit_subtract": "agent_loop_testing._e2e",
    "subtract_try": "agent_loop_testing._e2e",
    "serve_chat_model": "agent_loop_testing._chat_server",
    "ZERO_CONFIG_CALC": "agent_loop_testing._zero_config",
    "wheelhouse": "agent_loop_testing._zero_config",
    "proc_without_cgroup": "agent_loop_testing._cgroupfs",
    "read_only_cgroupfs": "agent_loop_testing._cgroupfs",
    "read_only_cgroupfs_works": "agent_loop_testing._cgroupfs",
    "GitHubEmulator": "agent_loop_testing._emulator",
    "Fault": "agent_loop_testing._emulator_faults",
    "LoggedRequest": "agent_loop_testing._emulator_faults",
    "GitHubHost": "agent_loop_testing._emulator_host",
    "History": "agent_loop_testing._emulator_history",
    "HistoryEdit": "agent_loop_testing._emulator_history",
    "HistoryIssue": "agent_loop_testing._emulator_history",
    "HistoryMerge": "agent_loop_testing._emulator_history",
    "HistoryPull": "agent_loop_testing._emulator_history",
    "HistoryPush": "agent_loop_testing._emulator_history",
    "HistoryStep": "agent_loop_testing._emulator_history",
    "InstantModel": "agent_loop_testing._instant",
    "CACHETOOLS_TEST_ARGS": "agent_loop_testing._vendored",
    "VendoredHistory": "agent_loop_testing._vendored",
    "seed_cachetools_history": "agent_loop_testing._vendored",
    "MessagesServer": "agent_loop_testing._messages_server",
    "serve_messages_model": "agent_loop_testing._messages_server",
    "to_call_llm_shape": "agent_loop_testing._messages_server",
    "unpaired_tool_result": "agent_loop_testing._messages_server",
    "CacheCharge": "agent_loop_testing._prompt_cache",
    "SimulatedPromptCache": "agent_loop_testing._prompt_cache",
    "approx_tokens": "agent_loop_testing._prompt_cache",
    "request_blocks": "agent_loop_testing._prompt_cache",
    "HeldCall": "agent_loop_testing._held",
    "HeldProgram": "agent_loop_testing._held",
    "is_valid_ref_name": "agent_loop_testing._emulator_refname",
    "SchemaMismatch": "agent_loop_testing._emulator_schema",
    "assert_matches_schema": "agent_loop_testing._emulator_schema",
    "serve_asgi": "agent_loop_testing._emulator_server",
    "CommitView": "agent_loop_testing._emulator_views",
    "Delivery": "agent_loop_testing._emulator_webhooks",
    "sign_payload": "agent_loop_testing._emulator_webhooks",
    "EmulatedComment": "agent_loop_testing._emulator_views",
    "EmulatedIssue": "agent_loop_testing._emulator_views",
    "EmulatedPull": "agent_loop_testing._emulator_views",
    "emulator_client": "agent_loop_testing._facade",
    "instant_retry": "agent_loop_testing._facade",
    "ModelSlot": "agent_loop_testing._harness",
    "emulator_runtime": "agent_loop_testing._harness",
    "emulator_settings": "agent_loop_testing._harness",
    "quiet_logs": "agent_loop_testing._harness",
    "stored_record": "agent_loop_testing._harness",
    "write_memory_file": "agent_loop_testing._harness",
}


def __getattr__(name: str) -> Any:
    """Import the emulator's and the harness's names on first use (they are heavy)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CACHETOOLS_TEST_ARGS",
    "CALC",
    "CALC_ISSUE",
    "CALC_PYPROJECT",
    "CALC_REPO",
    "CALC_SUB",
    "DEFAULT_ROUTE",
    "EVAL_HISTORY_OPS",
    "EVAL_HISTORY_REPO",
    "REPORT_FORGERY",
    "TESTS",
    "TESTS_SUB",
    "VERIFIED",
    "ZERO_CONFIG_CALC",
    "CacheCharge",
    "CalcFix",
    "CalcHistory",
    "CliLoop",
    "CommitView",
    "Delivery",
    "EmulatedComment",
    "EmulatedIssue",
    "EmulatedPull",
    "Fault",
    "GitHubEmulator",
    "GitHubHost",
    "HeldCall",
    "HeldProgram",
    "History",
    "HistoryEdit",
    "HistoryIssue",
    "HistoryMerge",
    "HistoryPull",
    "HistoryPush",
    "HistoryStep",
    "InstantModel",
    "LoggedRequest",
    "MessagesServer",
    "ModelPerArm",
    "ModelPerIssue",
    "ModelSlot",
    "NetworkAccessDenied",
    "RecordedCall",
    "RecordingSandbox",
    "SandboxCall",
    "SchemaMismatch",
    "ScriptMismatch",
    "ScriptedCall",
    "ScriptedEvalTask",
    "ScriptedModel",
    "SimulatedPromptCache",
    "Turn",
    "VendoredHistory",
    "approx_tokens",
    "assert_matches_schema",
    "block_network",
    "bwrap_e2e_marks",
    "bwrap_works",
    "call",
    "emulator_client",
    "emulator_runtime",
    "emulator_settings",
    "instant_retry",
    "is_loopback_address",
    "is_valid_ref_name",
    "proc_without_cgroup",
    "quiet_logs",
    "read_only_cgroupfs",
    "read_only_cgroupfs_works",
    "request_blocks",
    "seed_cachetools_history",
    "seed_calc_history",
    "seed_eval_history",
    "serve_asgi",
    "serve_chat_model",
    "serve_for_cli",
    "serve_messages_model",
    "shown_lines",
    "sign_payload",
    "stored_record",
    "submit_subtract",
    "subtract_try",
    "to_call_llm_shape",
    "turn",
    "unpaired_tool_result",
    "wheelhouse",
    "write_memory_file",
]
