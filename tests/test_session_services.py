import ray


def test_ray_head_runs_tasks(ray_session):
    @ray.remote
    def square(x: int) -> int:
        return x * x

    assert ray.get([square.remote(i) for i in range(4)]) == [0, 1, 4, 9]


def test_moto_serves_s3(moto_s3):
    client = moto_s3.client()
    client.create_bucket(Bucket="probe")
    client.put_object(Bucket="probe", Key="k", Body=b"v")
    assert client.get_object(Bucket="probe", Key="k")["Body"].read() == b"v"
