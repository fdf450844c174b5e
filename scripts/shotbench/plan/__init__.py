"""What to measure: the case matrix, named profiles and families of cases."""
