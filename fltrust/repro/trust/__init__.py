"""FederatedTrust reproduction (Sanchez Sanchez et al.; Section 6, Figures 4-5).

- :mod:`fltrust.repro.trust.experiments` -- experiments 1-5 from one definition, their
  configurations (``papers_repro/federatedtrust/configs/``) and the scoring modes;
- :mod:`fltrust.repro.trust.run` -- running an experiment, replaying its FactSheet in every scoring
  mode, the result JSON and the extended-mode observer (or companion run);
- :mod:`fltrust.repro.trust.ablation` -- the attack ablation on experiment 4 (SYNTHETIC N-BaIoT);
- :mod:`fltrust.repro.trust.report` -- RESULTS.md: paper vs ours per experiment and mode;
- :mod:`fltrust.repro.trust.sections` -- its sections beyond the paper: NbAFL noise, extended mode,
  the attack ablation.
"""
