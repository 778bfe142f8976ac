MY_RUNTIME_LOG=debug python app.py                    # see more
MY_RUNTIME_LOG=error python app.py                    # see less
MY_RUNTIME_LOG=warn,my_runtime=trace python app.py    # all of one part
