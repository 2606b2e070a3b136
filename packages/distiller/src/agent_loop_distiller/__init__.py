"""agent_loop_distiller."""
