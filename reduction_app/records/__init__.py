"""What the engine left behind: reduction events and offloaded files, their API and
pages (overview, events, files), and the storage the files live in."""
