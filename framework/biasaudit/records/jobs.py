"""One job's outcome in the job ledger (`verdicts.gating.Ledger`): written as one JSON line
by whichever process ran the job, read back by `biasaudit run` once Hydra's launcher
returns (the sweep table, the JUnit file, the exit code)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class JobOutcome(BaseModel):
    """A finished job: its verdict and run folder, or the error that stopped it.

    Only the fields given when it was made are written (`to_json`), as the ledger's lines
    always were: `{job, overrides, overall, measured, unmeasured_reason, run_dir}` for a
    run that finished, `{job, overrides, error}` for a user error, and `internal: true`
    added for a bug."""

    # an unknown key is a line this version did not write: refused (records/upgrade/jobs.py)
    model_config = ConfigDict(extra="forbid", frozen=True)
    job: int = 0
    """Hydra's job number (0 for a single run)."""
    overrides: list[str] = Field(default_factory=list)
    overall: str | None = None
    """The run's overall verdict (None: the job did not finish)."""
    measured: bool = True
    """False: too many of the run's model requests failed for it to measure (exit 4)."""
    unmeasured_reason: str | None = None
    run_dir: str | None = None
    error: str | None = None
    """The one-line error that stopped the job."""
    internal: bool = False
    """The error is a bug in biasaudit (a traceback was printed; the command exits 70)."""

    def ledger_record(self) -> dict[str, object]:
        """The ledger line's record: the fields given when the outcome was made, in field order."""
        return self.model_dump(mode="json", exclude_unset=True)


__all__ = ["JobOutcome"]
