"""agent_loop_common."""
