"""Memory: background compaction of episodes into sourced facts and capped summaries."""
