"""The bottom layer every part may import: artifact schemas (artifacts.py), the vocabulary of verdicts
(vocabulary.py) and of planted edits (edits.py), the artifact store (store.py), tables read by row group
(stream.py) and run liveness (liveness.py). Import the module you need; this package face imports nothing, so reading a schema does not
load the store."""
