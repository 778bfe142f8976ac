import my_runtime

# The users set no directive (MY_RUNTIME_LOG is unset).
assert my_runtime.log_destination() == "stderr"
assert my_runtime.log_filter() == "warn"  # the author's default_filter("warn")
my_runtime.set_log_destination("logging")
assert my_runtime.log_filter() == "trace"  # everything goes to Python, whose levels decide

# Once the users set directives, they are in force on either destination.
my_runtime.set_log_filter("info")
assert my_runtime.log_filter() == "info"
my_runtime.set_log_destination("stderr")
assert my_runtime.log_filter() == "info"

# Giving them up goes back to what the destination takes.
my_runtime.set_log_filter(None)
assert my_runtime.log_filter() == "warn"
