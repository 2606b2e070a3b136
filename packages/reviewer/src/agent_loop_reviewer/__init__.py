"""agent_loop_reviewer."""
