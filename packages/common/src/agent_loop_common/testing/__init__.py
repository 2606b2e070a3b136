"""Test doubles shared by every package: GitHub emulator, scripted model, network guard."""

from agent_loop_common.testing._hermetic import (
    NetworkAccessDenied,
    block_network,
    is_loopback_address,
)
from agent_loop_common.testing._scripted import (
    DEFAULT_ROUTE,
    RecordedCall,
    ScriptedCall,
    ScriptedModel,
    ScriptMismatch,
    Turn,
    call,
    turn,
)

__all__ = [
    "DEFAULT_ROUTE",
    "NetworkAccessDenied",
    "RecordedCall",
    "ScriptMismatch",
    "ScriptedCall",
    "ScriptedModel",
    "Turn",
    "block_network",
    "call",
    "is_loopback_address",
    "turn",
]
