%x = y
++z
function f(){return
1}
a
/b/g
