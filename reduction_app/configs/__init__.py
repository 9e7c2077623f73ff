"""Config profiles: named, versioned engine configs, and their form, pages and API."""
