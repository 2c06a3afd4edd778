"""The dashboard: a static page (``static/``) over the jobs API, served by ``cairn dev`` and ``cairn dashboard``.

:mod:`.assets` reads the page's files from the installed package; :mod:`cairn.client.dashboard_proxy`
(``cairn dashboard``) serves them beside a deployed API, signing the page's calls with the user's AWS
credentials.
"""
