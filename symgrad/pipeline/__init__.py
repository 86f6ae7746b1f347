"""The stages of one Function in order (stages), where its program comes from (source), and
the progress lines of long stages (estimate, ticker)."""
