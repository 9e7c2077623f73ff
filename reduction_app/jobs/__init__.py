"""Background work as rows of one shape (``models.Job``): queued, then running under a
lease its worker keeps with a heartbeat, then done or failed. :mod:`.lease` is what a
worker does while it holds a job; :mod:`.watch` is the one watcher that fails (or, for
sweep parts, queues again) every kind of job whose worker stopped answering or that no
worker took. Each kind of job declares its task beside the service it runs and tells the
watcher about itself (:func:`.watch.register`); this package imports none of them."""
