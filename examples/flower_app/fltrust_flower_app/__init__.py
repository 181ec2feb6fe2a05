"""fltrust example: a Flower app observed by both papers' metrics."""
