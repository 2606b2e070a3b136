"""Test doubles shared by every package: GitHub emulator, scripted model, network guard."""

from agent_loop_common.testing._hermetic import (
    NetworkAccessDenied,
    block_network,
    is_loopback_address,
)

__all__ = ["NetworkAccessDenied", "block_network", "is_loopback_address"]
