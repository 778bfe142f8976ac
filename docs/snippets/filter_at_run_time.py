import my_runtime

my_runtime.set_log_filter("info,ureq=warn")  # ValueError names a bad directive; nothing changes then
assert my_runtime.log_filter() == "info,ureq=warn"
my_runtime.load("model.pte")  # logs "loading model.pte" at Info
stats = my_runtime.log_stats()  # records that passed the filter, in all and per level
assert stats["emitted"] == stats["info"] == 1
assert stats["left_out"] == stats["failed_bytes"] == 0
my_runtime.set_log_filter(None)  # back to the author's default
assert my_runtime.log_filter() == "warn"
