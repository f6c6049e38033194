"""Rare-event hunts (``specconform hunt``): invariants that hold on every draw, judged over a billion draws of an
engine whose draws the oracle cannot compute.

A statistical check certifies a distribution to a total-variation distance of about 0.01; a bug that fires once in
2^24 draws (a coin of exactly 0 accepting a draft the target gives no mass) passes it. The hunt builds adversarial
rows once on the engine's device (``rows``), calls the engine's rejection sampler on them again and again with fresh
seeds (``launchers``), judges every draw there (``invariants``), and writes how many draws it made with the rate of
violations they would have missed (``record``); ``run`` spreads it over the GPUs, one engine process each, and
``command`` is its command line.
"""

from .record import HuntRecord, missed_rate, write_record
from .run import HuntOptions, hunt, hunt_on_device

__all__ = ["HuntOptions", "HuntRecord", "hunt", "hunt_on_device", "missed_rate", "write_record"]
