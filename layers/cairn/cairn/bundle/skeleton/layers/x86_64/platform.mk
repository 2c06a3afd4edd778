# sam build runs the layer's Makefile (../Makefile) in this folder when the template's Architecture is x86_64.
ARCHITECTURE := x86_64
