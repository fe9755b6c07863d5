"""The support timeline: every target × every release, the route at each, bounded by flips with evidence."""
