"""The application of docs/snippets/filter_variable.sh: it loads a model
through the example extension, which logs "loading model.pte" at Info."""

import my_runtime

my_runtime.load("model.pte")
