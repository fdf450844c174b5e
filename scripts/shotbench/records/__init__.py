"""What one measurement is: typed worker and case rows, their statuses and columns."""
