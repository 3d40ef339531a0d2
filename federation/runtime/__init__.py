"""Process runtime: the supervisor that owns every long-lived task (and, later, election)."""

__all__ = ["supervisor"]
