"""The reliability campaign: hostile inputs and faults (bad files, dying servers, full disks,
kills), each run as a user runs it (tests/_hostile.py)."""
