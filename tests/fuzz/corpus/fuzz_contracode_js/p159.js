x = a
++b