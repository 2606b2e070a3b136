"""agent_loop_builder."""
