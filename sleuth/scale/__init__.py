"""Scale-out on Ray (optional extra ``ray``): sharded builds, distributed evaluation, Ray Serve replicas."""
