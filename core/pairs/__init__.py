"""Pairs of process Trials: Baseline Trial k with Candidate Trial k of the same Eval task.

``evidence`` runs each Arm's new test files on the unchanged base and against the other Arm's
final commit (Pair evidence, kept in ``pairs/<pair>.json``: evidence, never a Score).
"""
