"""Plan execution: cache, backend calls, progress, counts."""

from biasaudit.engine.executor import execute_plan, execute_requests
from biasaudit.records.execution import ExecutionStats

__all__ = ["ExecutionStats", "execute_plan", "execute_requests"]
