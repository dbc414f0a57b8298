a = b
/c/g