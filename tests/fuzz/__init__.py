"""The stream fuzzer: seeded streams of every shape, run through every public learner and wrapper
with exact oracles (:mod:`tests.fuzz.harness`). ``python -m tests.fuzz --config NAME --seed N``
replays one stream and prints its operations up to the first failure."""
