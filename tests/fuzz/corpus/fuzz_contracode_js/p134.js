x = y
(z)