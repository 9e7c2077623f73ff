"""Dashboard pages, one module per page group; each module has its own ``urlpatterns``."""
