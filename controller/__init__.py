"""The controller: node group discovery, branch ENI books and scaling; the only AWS caller."""
