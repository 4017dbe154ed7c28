"""Plan execution: cache, backend calls, progress, counts."""

from biasaudit.engine.executor import ExecutionStats, execute_plan, execute_requests

__all__ = ["ExecutionStats", "execute_plan", "execute_requests"]
