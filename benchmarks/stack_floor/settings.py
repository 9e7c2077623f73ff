"""The production settings, with no middleware and the floor's URLs in front."""

from config.settings import *  # noqa: F403

MIDDLEWARE: list[str] = []
ROOT_URLCONF = "benchmarks.stack_floor.urls"
# The admin wants the session, auth and messages middleware; the floor serves no admin.
SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410"]
