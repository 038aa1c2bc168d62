"""A node's link to the controllers: registration, heartbeats, the metadata stream
(``lanes.runtime.link.controller_link``)."""
