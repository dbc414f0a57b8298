'use strict';x=['it\'s',"a\"b'c",'\x27','a\
b'];y={a,b:1,'c':2,1:3,1e3:4,[d]:5,__proto__,f(){},get g(){}};
if(a)b();else if(c)d();else e();for(;;);do x();while(a);l:for(k in o)continue l;
