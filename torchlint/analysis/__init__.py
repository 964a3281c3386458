"""Shared semantics that rules ask for instead of walking the tree themselves."""
